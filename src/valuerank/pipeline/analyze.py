"""The analysis jobs: `analyze:basic`, `analyze:deep`, `analyze:compare`, and the narrative
a model writes about a deep analysis (a `summarize` job with `analysis` in its payload).

`analyze:basic` is enqueued when a run completes (finalize) and on demand; `analyze:deep` on
demand (API, or after a basic one when asked). Jobs of a run go to the partition
`analysis:<run id>` — not the run's own, whose job counts are its progress. Each job calls
the same services as the CLI (valuerank.findings), so a cached result is served, never
recomputed, unless `force` is in the payload.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.errors import NotFoundError, ValueRankError
from valuerank.pipeline.calls import call_model
from valuerank.pipeline.context import PipelineContext
from valuerank.providers.base import CompletionRequest, Message
from valuerank.providers.model_id import parse_model_id
from valuerank.queue import Enqueued, HandlerResult, Job, JobSpec, Permanent, enqueue
from valuerank.queue.ids import new_id
from valuerank.runs.service import SUMMARIZE, Run
from valuerank.runs.states import RunStatus

# valuerank.findings (and the statistics stack under it: numpy, scipy, scikit-learn,
# statsmodels, ~150 MB and seconds of start-up) is imported by the handlers that compute, when
# an analysis job runs: a worker that only runs probes, and every short command that imports
# the pipeline's handlers, never loads it.
if TYPE_CHECKING:
    from valuerank.findings.analyses import Kind

ANALYZE_BASIC = "analyze:basic"
ANALYZE_DEEP = "analyze:deep"
ANALYZE_COMPARE = "analyze:compare"
KINDS: dict[Kind, str] = {"basic": ANALYZE_BASIC, "deep": ANALYZE_DEEP}
NARRATIVE_MAX_TOKENS = 500


def analysis_partition(run_id: str) -> str:
    return f"analysis:{run_id}"


async def enqueue_analysis(
    conn: AsyncConnection,
    run: Run,
    kind: Kind = "basic",
    *,
    force: bool = False,
    key: str | None = None,
    narrative_model: str | None = None,
) -> Enqueued:
    """Enqueue the run's analysis job of `kind`. With a `key` the job is enqueued once per
    key (e.g. per input hash); without one, every call enqueues a new job."""
    payload: dict[str, Any] = {"run_id": run.id, "force": force}
    if narrative_model is not None:
        payload["narrative_model"] = narrative_model
    return await enqueue(
        conn,
        JobSpec(
            kind=KINDS[kind],
            org_id=run.org_id,
            payload=payload,
            partition=analysis_partition(run.id),
            item_key=f"{KINDS[kind]}:{key or new_id()}",
            priority=run.priority,
        ),
    )


async def analyze_when_completed(conn: AsyncConnection, run: Run, status: RunStatus) -> None:
    """Finalize's one call: a completed run gets its basic analysis (once per generation)."""
    if status is RunStatus.COMPLETED:
        await enqueue_analysis(conn, run, "basic", key=f"generation-{run.config.generation}")


async def enqueue_comparison(
    conn: AsyncConnection, org_id: str, comparison_id: str, run_id: str
) -> Enqueued:
    return await enqueue(
        conn,
        JobSpec(
            kind=ANALYZE_COMPARE,
            org_id=org_id,
            payload={"comparison_id": comparison_id},
            partition=analysis_partition(run_id),
            item_key=f"{ANALYZE_COMPARE}:{comparison_id}",
        ),
    )


def _run_id(job: Job) -> str:
    try:
        return str(job.payload["run_id"])
    except (KeyError, TypeError) as exc:
        raise Permanent("malformed payload: no 'run_id'") from exc


async def run_analyze(ctx: PipelineContext, job: Job, kind: Kind) -> HandlerResult:
    from valuerank.findings.analyses import DEEP, run_analysis

    run_id = _run_id(job)
    force = bool(job.payload.get("force", False))
    try:
        outcome = await run_analysis(ctx.db, job.org_id, run_id, deep=kind == DEEP, force=force)
    except NotFoundError:
        return HandlerResult({"run_id": run_id, "status": "the run was deleted"})
    narrative_model = job.payload.get("narrative_model")
    if kind == DEEP and narrative_model and DEEP in outcome.computed:
        async with ctx.db.transaction(immediate=True) as conn:
            await enqueue(
                conn,
                JobSpec(
                    kind=SUMMARIZE,
                    org_id=job.org_id,
                    payload={
                        "run_id": run_id,
                        "analysis": DEEP,
                        "input_hash": outcome.input_hash,
                        "summary_model": str(narrative_model),
                    },
                    partition=analysis_partition(run_id),
                    item_key=f"narrative:{outcome.input_hash}:{narrative_model}",
                    provider=parse_model_id(str(narrative_model)).provider,
                    model=str(narrative_model),
                ),
            )
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

    try:
        comparison_id = str(job.payload["comparison_id"])
    except (KeyError, TypeError) as exc:
        raise Permanent("malformed payload: no 'comparison_id'") from exc
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


async def run_narrative(ctx: PipelineContext, job: Job) -> HandlerResult:
    """A `summarize` job about a deep analysis: the model's narrative of its insights."""
    from valuerank.findings.analyses import deep_state, set_narrative

    run_id = _run_id(job)
    model = str(job.payload.get("summary_model") or "")
    if not model:
        raise Permanent("malformed payload: no 'summary_model'")
    state = await deep_state(ctx.db, job.org_id, run_id)
    result = state.result()
    if result is None or state.stored is None:
        raise Permanent(f"run {run_id} has no deep analysis to narrate")
    if state.stored.input_hash != job.payload.get("input_hash"):
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
