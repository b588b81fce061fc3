"""The pipeline's job kinds, each paired with its handler in one registry (`PIPELINE_TASKS`),
and installed on a queue worker by `register_pipeline_handlers`.

Every kind is added here, explicitly: which kinds a worker runs never depends on what its
process happened to import. A kind's typed payload and its `enqueue` helper are declared with
the kind (`valuerank.runs.kinds`, `valuerank.pipeline.analyze`,
`valuerank.validation.requests`), below the pipeline, where the jobs are enqueued.
"""

from __future__ import annotations

from typing import Any

from valuerank.pipeline.analyze import (
    ANALYZE_BASIC_KIND,
    ANALYZE_COMPARE_KIND,
    ANALYZE_DEEP_KIND,
    NARRATE_KIND,
    SUMMARIZE_READS,
    NarrativePayload,
    run_analyze,
    run_compare,
    run_narrative,
)
from valuerank.pipeline.context import PipelineContext
from valuerank.pipeline.finalize import run_finalize
from valuerank.pipeline.judging import run_judge, run_summarize
from valuerank.pipeline.maintenance import maintenance_chores
from valuerank.pipeline.probe import run_probe
from valuerank.pipeline.run_end import move_on_at_tail
from valuerank.pipeline.validate import run_validate
from valuerank.queue import Job, Permanent, RateLimited, Snooze, Worker
from valuerank.queue.tasks import TaskRegistry
from valuerank.runs.hooks import RUN_HOOKS
from valuerank.runs.kinds import FINALIZE_KIND, JUDGE_KIND, PROBE_KIND
from valuerank.validation.requests import VALIDATE_KIND

PIPELINE_TASKS: TaskRegistry[PipelineContext] = TaskRegistry()


def _last_attempt(job: Job, exc: BaseException) -> bool:
    """Will this failure end the job? (Then it must still move its run on.)"""
    if isinstance(exc, RateLimited | Snooze):
        return False
    return isinstance(exc, Permanent) or job.attempts >= job.max_attempts


@PIPELINE_TASKS.task(PROBE_KIND)
async def probe(ctx: PipelineContext, job: Job) -> Any:
    try:
        return await run_probe(ctx, job)  # moves the run on itself when it succeeds
    except Exception as exc:
        if _last_attempt(job, exc):  # the run's last probes must still enqueue finalize
            run_id = PROBE_KIND.payload(job).run_id
            await move_on_at_tail(ctx.db, job.org_id, run_id)
        raise


@PIPELINE_TASKS.task(SUMMARIZE_READS)
async def summarize(ctx: PipelineContext, job: Job) -> Any:
    """A transcript's rationale; or a narrative queued under `summarize` before
    `summarize:analysis` existed."""
    item = SUMMARIZE_READS.payload(job)
    if isinstance(item, NarrativePayload):
        return await run_narrative(ctx, job, item)
    return await run_summarize(ctx, job, item)


@PIPELINE_TASKS.task(NARRATE_KIND)
async def narrate(ctx: PipelineContext, job: Job) -> Any:
    return await run_narrative(ctx, job, NARRATE_KIND.payload(job))


@PIPELINE_TASKS.task(ANALYZE_BASIC_KIND)
async def analyze_basic(ctx: PipelineContext, job: Job) -> Any:
    return await run_analyze(ctx, job, "basic")


@PIPELINE_TASKS.task(ANALYZE_DEEP_KIND)
async def analyze_deep(ctx: PipelineContext, job: Job) -> Any:
    return await run_analyze(ctx, job, "deep")


PIPELINE_TASKS.add(JUDGE_KIND, run_judge)
PIPELINE_TASKS.add(FINALIZE_KIND, run_finalize)
PIPELINE_TASKS.add(VALIDATE_KIND, run_validate)
PIPELINE_TASKS.add(ANALYZE_COMPARE_KIND, run_compare)


def register_pipeline_handlers(worker: Worker, ctx: PipelineContext) -> None:
    """Teach `worker` every pipeline kind, the pipeline's maintenance chores, and the runs'
    queue hooks (a run's jobs mean nothing without them: its end, its webhooks, its pruned
    counts)."""
    PIPELINE_TASKS.install(worker, ctx)
    worker.add_hooks(RUN_HOOKS)
    for name, chore in maintenance_chores(ctx.retention).items():  # e.g. reaping stale runs
        worker.add_maintenance_chore(name, chore)
