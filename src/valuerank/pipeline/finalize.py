"""The `finalize` job: moving a run on when a phase is done, probing → summarizing → closed.

One job per run generation does it, enqueued by whoever sees the run at its end (the last
probes, a reader of a stalled run, maintenance: see `run_end.py`, which owns a run's end). It
snoozes (no attempt spent, no error) while the phase still has queued or running jobs. When
probing is done it enqueues the judge and summarize jobs and moves the run to `summarizing`;
when those are done it stores the judges' consensus per transcript and the run's summary (a
model's narrative when the run names a summary model) and closes the run (`run_end.close_run`).
"""

from __future__ import annotations

from functools import partial

from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.pipeline.calls import call_model
from valuerank.pipeline.context import PipelineContext
from valuerank.pipeline.prompts import run_summary_messages
from valuerank.pipeline.run_end import close_run
from valuerank.pipeline.run_results import PAGE, plain_summary, store_consensus, transcript_pages
from valuerank.providers.base import CompletionRequest
from valuerank.providers.model_id import parse_model_id
from valuerank.queue import HandlerResult, Job, JobSpec, Snooze, enqueue_many
from valuerank.queue.call_reserve import reserve_request
from valuerank.runs.kinds import (
    FINALIZE_KIND,
    JUDGE,
    JUDGE_KIND,
    PROBE,
    SUMMARIZE,
    SUMMARIZE_KIND,
    JudgePayload,
    SummaryPayload,
)
from valuerank.runs.progress import job_progress
from valuerank.runs.results import ModelResult
from valuerank.runs.run import Run, get_run
from valuerank.runs.states import RunStatus, move_run
from valuerank.shapes import dump


def _follower_specs(run: Run, ids: list[str]) -> list[JobSpec]:
    config = run.config
    specs = [
        JUDGE_KIND.spec(
            JudgePayload(run_id=run.id, transcript_id=tid, judge_model=judge),
            org_id=run.org_id,
            partition=run.id,
            item_key=f"{JUDGE}:{tid}:{judge}",
            priority=run.priority,
            provider=parse_model_id(judge).provider,
            model=judge,
        )
        for tid in ids
        for judge in config.judge_models
    ]
    if config.summary_model is not None:
        model = config.summary_model
        specs += [
            SUMMARIZE_KIND.spec(
                SummaryPayload(run_id=run.id, transcript_id=tid, summary_model=model),
                org_id=run.org_id,
                partition=run.id,
                item_key=f"{SUMMARIZE}:{tid}",
                priority=run.priority,
                provider=parse_model_id(model).provider,
                model=model,
            )
            for tid in ids
        ]
    return specs


async def enqueue_followers(conn: AsyncConnection, run: Run, page: int = PAGE) -> int:
    """Judge jobs (transcript × judge) and summarize jobs (per transcript) of the run, a page
    of transcripts at a time."""
    if not run.config.judge_models and run.config.summary_model is None:
        return 0
    enqueued = 0
    async for ids in transcript_pages(conn, run, page):
        results = await enqueue_many(conn, _follower_specs(run, ids))
        enqueued += sum(1 for r in results if r.enqueued)
    return enqueued


async def _narrative(ctx: PipelineContext, run: Run, results: list[ModelResult]) -> str:
    text = plain_summary(results)
    model = run.config.summary_model
    if model is None or not results:
        return text
    request = CompletionRequest(
        model=parse_model_id(model).name,
        messages=run_summary_messages(dump(results)),
        temperature=0.0,
        max_tokens=400,
        hints={"role": "summary"},
    )
    # The finalize job has no provider, so the claim reserved nothing for this call.
    reserve = partial(reserve_request, ctx.db, provider=parse_model_id(model).provider, model=model)
    answer = await call_model(
        ctx.db,
        ctx.providers,
        org_id=run.org_id,
        model_id=model,
        request=request,
        before_call=reserve,
    )
    return f"{answer.completion.text.strip()}\n\n{text}"


async def _advance(conn: AsyncConnection, job: Job) -> Run | str | None:
    """One look at the run: the run if it is ready to complete, a reason to wait, or None
    when there is nothing to do. Writes (followers, `summarizing`) commit before any wait."""
    item = FINALIZE_KIND.payload(job)
    run = await get_run(conn, job.org_id, item.run_id)
    if item.generation != run.config.generation:
        return None  # a rerun or expansion started a new generation with its own finalize
    if run.status is RunStatus.RUNNING:
        if (await job_progress(conn, run.id, (PROBE,))).active:
            return "probes still running"
        followers = await enqueue_followers(conn, run)
        if followers or (await job_progress(conn, run.id, (JUDGE, SUMMARIZE))).active:
            await move_run(conn, run.org_id, run.id, RunStatus.SUMMARIZING)
            return "judging"
        return run
    if run.status is RunStatus.SUMMARIZING:
        if (await job_progress(conn, run.id, (JUDGE, SUMMARIZE))).active:
            return "judging"
        return run
    return None  # paused, cancelled or already finished


async def run_finalize(ctx: PipelineContext, job: Job) -> HandlerResult:
    async with ctx.db.transaction(immediate=True) as conn:
        state = await _advance(conn, job)
        if isinstance(state, Run):
            results = await store_consensus(conn, state)
    if state is None:
        return HandlerResult({"status": "nothing to do"})
    if isinstance(state, str):
        raise Snooze(ctx.poll_seconds, state)
    run = state
    summary = await _narrative(ctx, run, results)
    async with ctx.db.transaction(immediate=True) as conn:
        target, moved = await close_run(conn, run, results, summary)
    return HandlerResult({"status": target.value if moved else "unchanged"})
