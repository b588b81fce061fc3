"""Moving a run on when a phase is done: probing → summarizing → completed.

One `finalize` job per run generation does it. The last probe jobs enqueue it (idempotently:
unique item key `finalize:<generation>`); it snoozes (no attempt spent, no error) while the
phase still has queued or running jobs. When probing is done it enqueues the judge and
summarize jobs and moves the run to `summarizing`; when those are done it stores the judges'
consensus per transcript and the run's summary, and completes the run. `runs status` also
enqueues it when a run has nothing left to do but no finalize job (a probe whose last attempt
was reaped never ran the code that enqueues it).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import partial
from typing import Any

from sqlalchemy import func, literal_column, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.consensus import Judgement, decision_consensus
from valuerank.db.tables import jobs, judgments, models, runs, transcripts
from valuerank.pipeline.analyze import analyze_when_completed
from valuerank.pipeline.calls import call_model
from valuerank.pipeline.context import PipelineContext
from valuerank.pipeline.prompts import run_summary_messages
from valuerank.providers.base import CompletionRequest
from valuerank.providers.model_id import parse_model_id
from valuerank.queue import HandlerResult, Job, JobSpec, Snooze, enqueue, enqueue_many
from valuerank.queue.call_reserve import reserve_request
from valuerank.queue.states import JobStatus
from valuerank.runs.progress import job_progress
from valuerank.runs.records import bump_inputs
from valuerank.runs.results import ModelResult, model_results
from valuerank.runs.service import FINALIZE, JUDGE, PROBE, SUMMARIZE, Run, get_run
from valuerank.runs.states import RunStatus, move_run

# Probe jobs still active (besides the caller) at which the tail starts finalize: a few
# concurrent last jobs may each see the others running, so the threshold is not 0.
TAIL = 32
# Transcripts a finalize step reads (and holds) at a time when it enqueues their judges or
# stores their consensus.
PAGE = 1000


def finalize_spec(run: Run) -> JobSpec:
    return JobSpec(
        kind=FINALIZE,
        org_id=run.org_id,
        payload={"run_id": run.id, "generation": run.config.generation},
        partition=run.id,
        item_key=f"{FINALIZE}:{run.config.generation}",
        priority=run.priority,
        delay_seconds=0.2,
    )


async def ensure_finalize(conn: AsyncConnection, run: Run) -> bool:
    """Enqueue the run's finalize job for its generation; False if it exists already."""
    return (await enqueue(conn, finalize_spec(run))).enqueued


def _active_probes(org_id: str, run_id: str, status: JobStatus) -> Any:
    """At most TAIL + 1 of the run's probe jobs in `status` (queued or running). The status is
    a literal in the SQL so that both databases use the partial index of that status (queued
    jobs by partition, running jobs by organisation and partition): a few rows read, however
    large the run."""
    found = (
        select(literal_column("1"))
        .select_from(jobs)
        .where(
            jobs.c.org_id == org_id,
            jobs.c.partition == run_id,
            jobs.c.status == literal_column(f"'{status.value}'"),
            jobs.c.kind == PROBE,
        )
        .limit(TAIL + 1)
        .subquery()
    )
    return select(func.count()).select_from(found).scalar_subquery()


async def at_tail(conn: AsyncConnection, org_id: str, run_id: str) -> bool:
    """Are at most TAIL of the run's probe jobs still queued or running? Every probe asks when
    it ends, so this reads at most 2 × (TAIL + 1) index entries instead of counting the run."""
    queued = _active_probes(org_id, run_id, JobStatus.QUEUED)
    running = _active_probes(org_id, run_id, JobStatus.RUNNING)
    active = (await conn.execute(select(queued + running))).scalar_one()
    return int(active) <= TAIL


async def transcript_pages(
    conn: AsyncConnection, run: Run, page: int = PAGE
) -> AsyncIterator[list[str]]:
    """The run's transcript ids, `page` at a time in id order (keyset pages, each read whole, so
    the caller may write between pages on either database): memory stays one page."""
    after = ""
    while True:
        ids = list(
            (
                await conn.execute(
                    select(transcripts.c.id)
                    .where(
                        transcripts.c.org_id == run.org_id,
                        transcripts.c.run_id == run.id,
                        transcripts.c.id > after,
                    )
                    .order_by(transcripts.c.id)
                    .limit(page)
                )
            ).scalars()
        )
        if not ids:
            return
        yield ids
        after = ids[-1]


def _follower_specs(run: Run, ids: list[str]) -> list[JobSpec]:
    config = run.config
    specs = [
        JobSpec(
            kind=JUDGE,
            org_id=run.org_id,
            payload={"run_id": run.id, "transcript_id": tid, "judge_model": judge},
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
        specs += [
            JobSpec(
                kind=SUMMARIZE,
                org_id=run.org_id,
                payload={
                    "run_id": run.id,
                    "transcript_id": tid,
                    "summary_model": config.summary_model,
                },
                partition=run.id,
                item_key=f"{SUMMARIZE}:{tid}",
                priority=run.priority,
                provider=parse_model_id(config.summary_model).provider,
                model=config.summary_model,
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


async def _store_consensus(conn: AsyncConnection, run: Run, page: int) -> int:
    """The judges' consensus per transcript (model weights from the registry), a page of
    transcripts at a time."""
    weights = {
        f"{p}:{n}": float(w)
        for p, n, w in await conn.execute(select(models.c.provider, models.c.name, models.c.weight))
    }
    await bump_inputs(conn, run.id)  # the consensus is what the analysis reads of judges
    stored = 0
    async for ids in transcript_pages(conn, run, page):
        rows = await conn.execute(
            select(judgments)
            .where(judgments.c.org_id == run.org_id, judgments.c.transcript_id.in_(ids))
            .order_by(judgments.c.transcript_id, judgments.c.judge_model)
        )
        by_transcript: dict[str, list[Judgement]] = {}
        for row in rows:
            by_transcript.setdefault(row.transcript_id, []).append(
                Judgement(
                    model=row.judge_model,
                    decision=row.decision,
                    confidence=float(row.confidence),
                    weight=weights.get(row.judge_model, 1.0),
                    prioritized_values=tuple(row.prioritized_values),
                    deprioritized_values=tuple(row.deprioritized_values),
                )
            )
        for transcript_id, judged in by_transcript.items():
            await conn.execute(
                update(transcripts)
                .where(transcripts.c.id == transcript_id)
                .values(consensus=decision_consensus(judged).to_dict())
            )
        stored += len(by_transcript)
    return stored


async def failure_reason(conn: AsyncConnection, run_id: str) -> str:
    """Why no probe wrote a transcript, from the failed probes' own last errors (the most
    common first), and where to look."""
    rows = await conn.execute(
        select(jobs.c.last_error, func.count())
        .where(
            jobs.c.partition == run_id,
            jobs.c.kind == PROBE,
            jobs.c.status == JobStatus.FAILED.value,
        )
        .group_by(jobs.c.last_error)
        .order_by(func.count().desc(), jobs.c.last_error)
    )
    counted = [(str(error or "no error recorded"), int(n)) for error, n in rows]
    failed = sum(n for _, n in counted)
    if not failed:
        return "no probe job wrote a transcript"
    shown = "; ".join(f"{error} ({n}×)" for error, n in counted[:_REASONS_SHOWN])
    others = len(counted) - _REASONS_SHOWN
    more = f"; and {others} other errors" if others > 0 else ""
    return (
        f"every probe job failed ({failed}): {shown}{more} — see `valuerank queue status` "
        "and `valuerank runs rerun-failed`"
    )


_REASONS_SHOWN = 3


def plain_summary(results: list[ModelResult]) -> str:
    """The run's summary from its figures alone (also the fallback when no model writes one)."""
    if not results:
        return "No transcript was written."
    lines = []
    for r in results:
        mean = "no decision read" if r.mean_decision is None else f"mean {r.mean_decision:.2f}"
        lines.append(
            f"{r.model}: {r.transcripts} transcripts, {r.decided} decided ({mean}), "
            f"{r.refusals} refusals"
        )
    return "\n".join(lines)


async def _narrative(ctx: PipelineContext, run: Run, results: list[ModelResult]) -> str:
    text = plain_summary(results)
    model = run.config.summary_model
    if model is None or not results:
        return text
    request = CompletionRequest(
        model=parse_model_id(model).name,
        messages=run_summary_messages([r.to_dict() for r in results]),
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
    run = await get_run(conn, job.org_id, str(job.payload["run_id"]))
    if int(job.payload.get("generation", 0)) != run.config.generation:
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


async def close_run(
    conn: AsyncConnection, run: Run, results: list[ModelResult], summary: str
) -> tuple[RunStatus, bool]:
    """The finalize rule, written once (finalize and stale-run reaping use it): a run that
    wrote any transcript is `completed` (failed probes are counted in its results), one that
    wrote none is `failed` with the probes' errors as its reason. Moves the run there from
    running or summarizing (guarded), stores its summary and enqueues its analysis; returns
    the target and whether this call moved it (False: someone else moved it first)."""
    written = sum(r.transcripts for r in results)
    target = RunStatus.COMPLETED if written else RunStatus.FAILED
    error = None if written else await failure_reason(conn, run.id)
    sources = frozenset({RunStatus.RUNNING, RunStatus.SUMMARIZING})
    moved = await move_run(conn, run.org_id, run.id, target, sources=sources, error=error)
    if moved:
        await conn.execute(update(runs).where(runs.c.id == run.id).values(summary=summary))
        await analyze_when_completed(conn, run, target)
    return target, moved


async def store_consensus(conn: AsyncConnection, run: Run, page: int = PAGE) -> list[ModelResult]:
    """The judges' consensus per transcript stored (`page` transcripts at a time); the run's
    results per model."""
    await _store_consensus(conn, run, page)
    return await model_results(conn, run.org_id, run.id)


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
