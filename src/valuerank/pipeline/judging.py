"""The `judge` and `summarize` jobs: what other models read in a transcript.

`judge`: one judge model reads one transcript against the values rubric and returns the
decision, the prioritised and deprioritised values and a confidence (one row per transcript
and judge). `summarize`: a short rationale per transcript. Both are idempotent: a second
execution finds its row (or the rationale) already written and changes nothing.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import judgments, rubrics, transcripts
from valuerank.definitions.presentation import map_decision, presentation_of, shown_range
from valuerank.failpoints import JUDGE_AFTER_JUDGMENT, failpoint
from valuerank.formats import parse_transcript
from valuerank.formats.rubric import Rubric
from valuerank.pipeline.calls import call_model
from valuerank.pipeline.context import PipelineContext
from valuerank.pipeline.prompts import (
    JUDGE_SCHEMA,
    judge_messages,
    parse_judge_reply,
    summary_messages,
)
from valuerank.pipeline.run_results import store_transcript_consensus
from valuerank.providers.base import CompletionRequest
from valuerank.providers.model_id import parse_model_id
from valuerank.queue import HandlerResult, Job, Permanent
from valuerank.runs.kinds import JUDGE_KIND, SummaryPayload
from valuerank.runs.records import JudgmentRecord, insert_judgment
from valuerank.runs.run import Run, get_run

JUDGE_MAX_TOKENS = 600
SUMMARY_MAX_TOKENS = 200


async def _transcript(ctx: PipelineContext, org_id: str, transcript_id: str) -> Any:
    async with ctx.db.transaction() as conn:
        row = (
            await conn.execute(
                select(transcripts).where(
                    transcripts.c.org_id == org_id, transcripts.c.id == transcript_id
                )
            )
        ).first()
    if row is None:
        raise Permanent(f"transcript {transcript_id} is gone (run deleted?)")
    return row


async def run_rubric(conn: AsyncConnection, run: Run) -> Rubric | None:
    """The values rubric the run's judges read (None: the run has none)."""
    if run.rubric_id is None:
        return None
    content = (
        await conn.execute(select(rubrics.c.content).where(rubrics.c.id == run.rubric_id))
    ).scalar_one_or_none()
    return None if content is None else Rubric.from_dict(content)


async def _rubric(ctx: PipelineContext, org_id: str, run_id: str) -> Rubric | None:
    async with ctx.db.transaction() as conn:
        return await run_rubric(conn, await get_run(conn, org_id, run_id))


def _in_definition_direction(decision: int | None, row: Any) -> int | None:
    """A judge reads the point chosen on the scale the transcript shows; a reversed
    presentation's is mapped back, as its transcript's decision code is (probe.py)."""
    if decision is None or presentation_of(row.scenario_id)[1] != "reversed":
        return decision
    turns = parse_transcript(row.content).turns
    return map_decision(decision, *shown_range(turns[0].probe if turns else ""))


async def run_judge(ctx: PipelineContext, job: Job) -> HandlerResult:
    item = JUDGE_KIND.payload(job)
    transcript_id, judge_model = item.transcript_id, item.judge_model
    row = await _transcript(ctx, job.org_id, transcript_id)
    async with ctx.db.transaction() as conn:
        done = (
            await conn.execute(
                select(judgments.c.id).where(
                    judgments.c.transcript_id == transcript_id,
                    judgments.c.judge_model == judge_model,
                )
            )
        ).scalar_one_or_none()
    if done is not None:
        return HandlerResult({"judgment_id": done, "reused": True})
    rubric = await _rubric(ctx, job.org_id, row.run_id)
    request = CompletionRequest(
        model=parse_model_id(judge_model).name,
        messages=judge_messages(row.content, rubric),
        temperature=0.0,
        max_tokens=JUDGE_MAX_TOKENS,
        json_schema=JUDGE_SCHEMA,
        hints={"role": "judge"},
    )
    answer = await call_model(
        ctx.db, ctx.providers, org_id=job.org_id, model_id=judge_model, request=request
    )
    known = [v.name for v in rubric.values] if rubric is not None else None
    try:
        reply = parse_judge_reply(answer.completion.text, known_values=known)
    except ValueError as exc:
        raise Permanent(f"judge {judge_model} gave no usable verdict: {exc}") from exc
    judgment = JudgmentRecord(
        judge_model=judge_model,
        decision=_in_definition_direction(reply.decision, row),
        prioritized_values=tuple(reply.prioritized_values),
        deprioritized_values=tuple(reply.deprioritized_values),
        confidence=reply.confidence,
        rationale=reply.rationale,
        input_tokens=answer.completion.usage.input_tokens,
        output_tokens=answer.completion.usage.output_tokens,
        cost_usd=answer.cost_usd,
    )
    async with ctx.db.transaction(immediate=True) as conn:
        if await insert_judgment(conn, job.org_id, transcript_id, judgment):
            await store_transcript_consensus(conn, job.org_id, transcript_id)
    failpoint(JUDGE_AFTER_JUDGMENT)  # committed, not yet completed: the retry must reuse it
    return HandlerResult(
        {"decision": reply.decision, "confidence": reply.confidence},
        event_data={"scenario_id": row.scenario_id, "model": row.model, "judge": judge_model},
    )


async def run_summarize(ctx: PipelineContext, job: Job, item: SummaryPayload) -> HandlerResult:
    transcript_id, summary_model = item.transcript_id, item.summary_model
    row = await _transcript(ctx, job.org_id, transcript_id)
    if row.rationale is not None:
        return HandlerResult({"reused": True})
    request = CompletionRequest(
        model=parse_model_id(summary_model).name,
        messages=summary_messages(row.content, row.decision_code),
        temperature=0.0,
        max_tokens=SUMMARY_MAX_TOKENS,
        hints={"role": "summary", "decision_code": row.decision_code},
    )
    answer = await call_model(
        ctx.db, ctx.providers, org_id=job.org_id, model_id=summary_model, request=request
    )
    async with ctx.db.transaction(immediate=True) as conn:
        await conn.execute(
            update(transcripts)
            .where(transcripts.c.id == transcript_id, transcripts.c.rationale.is_(None))
            .values(rationale=answer.completion.text.strip())
        )
    return HandlerResult({"rationale_chars": len(answer.completion.text)})
