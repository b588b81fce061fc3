"""The pipeline's job kinds, registered on a queue worker."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from valuerank.pipeline.analyze import (
    ANALYZE_BASIC,
    ANALYZE_COMPARE,
    ANALYZE_DEEP,
    run_analyze,
    run_compare,
    run_narrative,
)
from valuerank.pipeline.context import PipelineContext
from valuerank.pipeline.finalize import run_finalize
from valuerank.pipeline.judging import run_judge, run_summarize
from valuerank.pipeline.maintenance import maintenance_chores
from valuerank.pipeline.probe import ProbeItem, run_probe
from valuerank.pipeline.run_end import move_on_at_tail
from valuerank.pipeline.validate import run_validate
from valuerank.queue import Job, Permanent, RateLimited, Snooze, Worker
from valuerank.runs.service import FINALIZE, JUDGE, PROBE, SUMMARIZE
from valuerank.validation.requests import VALIDATE

Step = Callable[[PipelineContext, Job], Awaitable[Any]]


def _last_attempt(job: Job, exc: BaseException) -> bool:
    """Will this failure end the job? (Then it must still move its run on.)"""
    if isinstance(exc, RateLimited | Snooze):
        return False
    return isinstance(exc, Permanent) or job.attempts >= job.max_attempts


def _probe_handler(ctx: PipelineContext) -> Callable[[Job], Coroutine[Any, Any, Any]]:
    async def handle(job: Job) -> Any:
        try:
            return await run_probe(ctx, job)  # moves the run on itself when it succeeds
        except Exception as exc:
            if _last_attempt(job, exc):  # the run's last probes must still enqueue finalize
                run_id = ProbeItem.from_payload(job.payload).run_id
                await move_on_at_tail(ctx.db, job.org_id, run_id)
            raise

    return handle


def _bind(ctx: PipelineContext, step: Step) -> Callable[[Job], Coroutine[Any, Any, Any]]:
    async def handle(job: Job) -> Any:
        return await step(ctx, job)

    return handle


async def _summarize(ctx: PipelineContext, job: Job) -> Any:
    """A transcript's rationale, or (with `analysis` in the payload) an analysis narrative."""
    if isinstance(job.payload, dict) and "analysis" in job.payload:
        return await run_narrative(ctx, job)
    return await run_summarize(ctx, job)


async def _analyze_basic(ctx: PipelineContext, job: Job) -> Any:
    return await run_analyze(ctx, job, "basic")


async def _analyze_deep(ctx: PipelineContext, job: Job) -> Any:
    return await run_analyze(ctx, job, "deep")


def register_pipeline_handlers(worker: Worker, ctx: PipelineContext) -> None:
    worker.register(PROBE, _probe_handler(ctx))
    worker.register(JUDGE, _bind(ctx, run_judge))
    worker.register(SUMMARIZE, _bind(ctx, _summarize))
    worker.register(FINALIZE, _bind(ctx, run_finalize))
    worker.register(VALIDATE, _bind(ctx, run_validate))
    worker.register(ANALYZE_BASIC, _bind(ctx, _analyze_basic))
    worker.register(ANALYZE_DEEP, _bind(ctx, _analyze_deep))
    worker.register(ANALYZE_COMPARE, _bind(ctx, run_compare))
    for name, chore in maintenance_chores().items():  # e.g. reaping stale runs
        worker.add_maintenance_chore(name, chore)
