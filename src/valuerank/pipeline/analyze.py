"""The analysis jobs: `analyze:basic`, `analyze:deep`, `analyze:compare`, and the narrative
a model writes about a deep analysis (`summarize:analysis`; jobs queued before that kind
existed are `summarize` jobs with `analysis` in their payload, still read as narratives:
`SUMMARIZE_READS`).

`analyze:basic` is enqueued when a run completes (finalize) and on demand; `analyze:deep` on
demand (API, or after a basic one when asked). Jobs of a run go to the partition
`analysis:<run id>` — not the run's own, whose job counts are its progress. Each job calls
the same services as the CLI (valuerank.findings), so a cached result is served, never
recomputed, unless `force` is in the payload. A narrative asked for is queued whenever the
deep analysis of the run's current inputs has none — computed now or served from the cache —
once per input hash and model; its model is checked when it is asked for, as a run's models
are at creation (UNKNOWN_MODEL, MISSING_CREDENTIAL).

The statistics (valuerank.findings → valuerank.analysis: numpy, scipy, scikit-learn,
statsmodels) are imported by the functions that use them, not with this module: every worker
and CLI command imports the pipeline, and most never analyse (that import alone costs seconds
of start-up and about 150 MB).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.credentials.store import require_credentials
from valuerank.errors import NotFoundError, ValueRankError
from valuerank.pipeline.calls import call_model
from valuerank.pipeline.context import PipelineContext
from valuerank.providers.base import CompletionRequest, Message
from valuerank.providers.model_id import parse_model_id
from valuerank.queue import Enqueued, HandlerResult, Job, Permanent
from valuerank.queue.ids import new_id
from valuerank.queue.tasks import JobKind, TaskPayload
from valuerank.registry.check import check_models
from valuerank.registry.service import seed_models
from valuerank.runs.kinds import SUMMARIZE_KIND, SummaryPayload
from valuerank.runs.partitions import analysis_partition
from valuerank.runs.run import Run
from valuerank.runs.states import RunStatus

if TYPE_CHECKING:
    from valuerank.findings.analyses import AnalysisOutcome, Kind


class AnalyzePayload(TaskPayload):
    """Analyse a run (served from the cache unless `force`); a deep one may ask for its
    narrative by a model."""

    run_id: str
    force: bool = False
    narrative_model: str | None = None


class ComparePayload(TaskPayload):
    comparison_id: str


class NarrativePayload(TaskPayload):
    """A model's narrative of the run's deep analysis of `input_hash`."""

    run_id: str
    analysis: str = "deep"
    input_hash: str | None = None
    summary_model: str


ANALYZE_BASIC_KIND: JobKind[AnalyzePayload] = JobKind("analyze:basic", AnalyzePayload)
ANALYZE_DEEP_KIND: JobKind[AnalyzePayload] = JobKind("analyze:deep", AnalyzePayload)
ANALYZE_COMPARE_KIND: JobKind[ComparePayload] = JobKind("analyze:compare", ComparePayload)
NARRATE_KIND: JobKind[NarrativePayload] = JobKind("summarize:analysis", NarrativePayload)
# What a `summarize` job may hold: a transcript's summary, or a narrative queued before
# `summarize:analysis` existed (jobs already in a database still run). A narrative says which
# analysis it narrates; a transcript's summary names no analysis, so the two never mix up.
SUMMARIZE_READS: JobKind[SummaryPayload | NarrativePayload] = JobKind(
    SUMMARIZE_KIND.name, SummaryPayload | NarrativePayload, aliases=SUMMARIZE_KIND.aliases
)
ANALYSIS_KINDS = (ANALYZE_BASIC_KIND, ANALYZE_DEEP_KIND, ANALYZE_COMPARE_KIND, NARRATE_KIND)

ANALYZE_BASIC = ANALYZE_BASIC_KIND.name
ANALYZE_DEEP = ANALYZE_DEEP_KIND.name
ANALYZE_COMPARE = ANALYZE_COMPARE_KIND.name
NARRATE = NARRATE_KIND.name
KINDS: dict[Kind, JobKind[AnalyzePayload]] = {
    "basic": ANALYZE_BASIC_KIND,
    "deep": ANALYZE_DEEP_KIND,
}
NARRATIVE_MAX_TOKENS = 500


async def check_narrative_model(
    conn: AsyncConnection,
    org_id: str,
    model: str,
    *,
    allow_unknown: bool = False,
    environ: Mapping[str, str] | None = None,
) -> None:
    """The narrative model is checked as a run's models are at creation: one this install
    can serve and the registry knows (UNKNOWN_MODEL, unless `allow_unknown`), with a key for
    its provider (MISSING_CREDENTIAL)."""
    await seed_models(conn)
    await check_models(conn, [model], allow_unknown=allow_unknown)
    await require_credentials(
        conn, org_id, [model], environ=os.environ if environ is None else environ
    )


async def enqueue_analysis(
    conn: AsyncConnection,
    run: Run,
    kind: Kind = "basic",
    *,
    force: bool = False,
    key: str | None = None,
    narrative_model: str | None = None,
    allow_unknown_model: bool = False,
) -> Enqueued:
    """Enqueue the run's analysis job of `kind` (the narrative model checked first). With a
    `key` the job is enqueued once per key (e.g. per input hash); without one, every call
    enqueues a new job."""
    if narrative_model is not None:
        await check_narrative_model(
            conn, run.org_id, narrative_model, allow_unknown=allow_unknown_model
        )
    job_kind = KINDS[kind]
    return await job_kind.enqueue(
        conn,
        AnalyzePayload(run_id=run.id, force=force, narrative_model=narrative_model),
        org_id=run.org_id,
        partition=analysis_partition(run.id),
        item_key=f"{job_kind.name}:{key or new_id()}",
        priority=run.priority,
    )


async def enqueue_narrative(
    conn: AsyncConnection, org_id: str, run_id: str, input_hash: str, model: str, computed_at: str
) -> Enqueued:
    """The `summarize:analysis` job that narrates the run's deep analysis of `input_hash`
    computed at `computed_at`: once per analysis and model, so asking twice queues one job,
    and a forced recomputation (which drops the narrative) gets a new one."""
    from valuerank.findings.analyses import DEEP

    return await NARRATE_KIND.enqueue(
        conn,
        NarrativePayload(run_id=run_id, analysis=DEEP, input_hash=input_hash, summary_model=model),
        org_id=org_id,
        partition=analysis_partition(run_id),
        item_key=f"narrative:{input_hash}:{_digest(model, computed_at)}",
        provider=parse_model_id(model).provider,
        model=model,
    )


def _digest(*parts: str) -> str:
    """A short fixed-length key part (model ids may be long; item keys are ≤ 300 chars)."""
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:16]


def needs_narrative(outcome: AnalysisOutcome) -> bool:
    """The deep analysis served has no narrative yet."""
    return outcome.current_deep is not None and not outcome.current_deep.get("narrative")


async def narrate(
    conn: AsyncConnection, org_id: str, outcome: AnalysisOutcome, model: str
) -> Enqueued | None:
    """Queue the narrative of the outcome's deep analysis unless it has one."""
    if not needs_narrative(outcome) or outcome.current_deep is None:
        return None
    computed_at = str(outcome.current_deep.get("computedAt") or "")
    return await enqueue_narrative(
        conn, org_id, outcome.run_id, outcome.input_hash, model, computed_at
    )


async def analyze_when_completed(conn: AsyncConnection, run: Run, status: RunStatus) -> None:
    """Finalize's one call: a completed run gets its basic analysis (once per generation)."""
    if status is RunStatus.COMPLETED:
        await enqueue_analysis(conn, run, "basic", key=f"generation-{run.config.generation}")


async def enqueue_comparison(
    conn: AsyncConnection, org_id: str, comparison_id: str, run_id: str
) -> Enqueued:
    return await ANALYZE_COMPARE_KIND.enqueue(
        conn,
        ComparePayload(comparison_id=comparison_id),
        org_id=org_id,
        partition=analysis_partition(run_id),
        item_key=f"{ANALYZE_COMPARE}:{comparison_id}",
    )


async def run_analyze(ctx: PipelineContext, job: Job, kind: Kind) -> HandlerResult:
    from valuerank.findings.analyses import DEEP, run_analysis

    item = KINDS[kind].payload(job)
    run_id = item.run_id
    try:
        deep = kind == DEEP
        outcome = await run_analysis(ctx.db, job.org_id, run_id, deep=deep, force=item.force)
    except NotFoundError:
        return HandlerResult({"run_id": run_id, "status": "the run was deleted"})
    if kind == DEEP and item.narrative_model and needs_narrative(outcome):
        async with ctx.db.transaction(immediate=True) as conn:
            await narrate(conn, job.org_id, outcome, item.narrative_model)
    return HandlerResult(
        {
            "run_id": run_id,
            "cached": kind not in outcome.computed,
            "input_hash": outcome.input_hash,
        },
        event_data={"run_id": run_id, "analysis": kind},
    )


async def run_compare(ctx: PipelineContext, job: Job) -> HandlerResult:
    from valuerank.findings.comparisons import execute_comparison

    comparison_id = ANALYZE_COMPARE_KIND.payload(job).comparison_id
    try:
        done = await execute_comparison(ctx.db, job.org_id, comparison_id)
    except ValueRankError as exc:
        raise Permanent(exc.message) from exc
    except (ValueError, ArithmeticError) as exc:
        raise Permanent(f"comparison failed: {exc}") from exc
    return HandlerResult({"comparison_id": done.id, "status": done.status})


def narrative_messages(insights: list[str], warnings: list[dict[str, Any]]) -> tuple[Message, ...]:
    system = (
        "You write the narrative of a ValueRank analysis for researchers: what the statistics "
        "say about how the models prioritise values, where they agree and differ, and what "
        "limits the findings. Use only the findings given, keep every number as given, and do "
        "not invent causes. Two or three short paragraphs."
    )
    lines = [f"- {s}" for s in insights] or ["- (no notable findings)"]
    caveats = [f"- {w['code']}: {w['message']}" for w in warnings]
    user = "Findings:\n" + "\n".join(lines)
    if caveats:
        user += "\n\nCaveats:\n" + "\n".join(caveats)
    return (Message("system", system), Message("user", user))


async def run_narrative(ctx: PipelineContext, job: Job, item: NarrativePayload) -> HandlerResult:
    """A `summarize:analysis` job: the model's narrative of a deep analysis's insights."""
    from valuerank.findings.analyses import deep_state, set_narrative

    run_id, model = item.run_id, item.summary_model
    if not model:
        raise Permanent("malformed payload: no 'summary_model'")
    state = await deep_state(ctx.db, job.org_id, run_id)
    result = state.result()
    if result is None or state.stored is None:
        raise Permanent(f"run {run_id} has no deep analysis to narrate")
    if state.stored.input_hash != item.input_hash:
        return HandlerResult({"skipped": "the analysis changed since this job was enqueued"})
    request = CompletionRequest(
        model=parse_model_id(model).name,
        messages=narrative_messages(result.get("insights", []), result.get("warnings", [])),
        temperature=0.0,
        max_tokens=NARRATIVE_MAX_TOKENS,
        hints={"role": "summary"},
    )
    answer = await call_model(
        ctx.db, ctx.providers, org_id=job.org_id, model_id=model, request=request
    )
    async with ctx.db.transaction(immediate=True) as conn:
        written = await set_narrative(
            conn, job.org_id, run_id, state.stored.input_hash, answer.completion.text.strip()
        )
    return HandlerResult({"narrative_written": written})
