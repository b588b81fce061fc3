"""/api/queue: the queue-management API of the seed (api-queue-system.md).

Runs are created and started through `pipeline.launch.launch_run`, as `valuerank runs create`
does: every model is checked first (UNKNOWN_MODEL names the one refused, nothing is written).
`DELETE /api/queue/runs/{id}` deletes only a run that is not under way (pending, completed,
failed or cancelled): cancel it first; while its cancelled jobs are still stopping it also
answers 409. `POST /api/queue/pause|resume` pause the caller's organisation's jobs only (the
whole-install pause is `POST /api/system/queue/pause`). The organisation's dead jobs (failed:
attempts spent or a permanent error) are listed with their errors and retried one at a time
(`valuerank queue retry-failed --job`; a run's all at once: `POST /api/runs/{id}/rerun-failed`;
a partition's: `POST /api/queue/jobs/retry-failed`).
Another organisation's run or job is 404.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse
from pydantic import ConfigDict, Field
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.api.deps import Admin, Member, RequestContext, Viewer
from valuerank.api.envelope import ok
from valuerank.api.fields import NO_NUL, Body
from valuerank.api.pagination import Cursor, Limit, decode_cursor, page
from valuerank.api.run_bodies import NewRunBody, launch_from_body
from valuerank.api.schemas import Envelope
from valuerank.api.schemas.runs import (
    DeadJobPage,
    DeletedRun,
    LaunchedRun,
    QueuePaused,
    RetriedJob,
    RunSummary,
)
from valuerank.pipeline.dead_jobs import dead_jobs
from valuerank.queue import pause_org, queue_status, requeue_failed, resume_org
from valuerank.queue.status import QueueStatus
from valuerank.runs import service
from valuerank.runs.progress import RunReport, read_report
from valuerank.shapes import dump

router = APIRouter(prefix="/api/queue", tags=["queue"])


@router.post("/runs", status_code=201, response_model=Envelope[LaunchedRun])
async def create_run_route(body: NewRunBody, ctx: Member) -> JSONResponse:
    """Create a run of a definition version and start it (one probe job per scenario, model
    and sample): its scenarios, job count and cost estimate. A model that cannot be served
    is refused (422 UNKNOWN_MODEL, MISSING_CREDENTIAL…) before anything is written."""
    async with ctx.db.transaction(immediate=True) as conn:
        data = await launch_from_body(conn, ctx.org_id, body, start=body.start)
    return ok(data, status_code=201)


@router.get("/runs/{run_id}", response_model=Envelope[RunReport])
async def run_status_route(run_id: str, ctx: Viewer) -> JSONResponse:
    """The run's status and progress: probe jobs per state, judging, cost, ETA, error."""
    report = await read_report(ctx.db, ctx.org_id, run_id)
    return ok(dump(report))


Steer = Callable[[AsyncConnection, str, str], Awaitable[service.Run]]


async def _steer(ctx: RequestContext, action: Steer, run_id: str) -> JSONResponse:
    async with ctx.db.transaction(immediate=True) as conn:
        run = await action(conn, ctx.org_id, run_id)
    return ok(run.summary_dict())


@router.post("/runs/{run_id}/pause", response_model=Envelope[RunSummary])
async def pause_run_route(run_id: str, ctx: Member) -> JSONResponse:
    """Stop starting the run's jobs; running ones finish, nothing is lost (409 if the run
    has ended)."""
    return await _steer(ctx, service.pause_run, run_id)


@router.post("/runs/{run_id}/resume", response_model=Envelope[RunSummary])
async def resume_run_route(run_id: str, ctx: Member) -> JSONResponse:
    """Start the paused run's jobs again."""
    return await _steer(ctx, service.resume_run, run_id)


@router.post("/runs/{run_id}/cancel", response_model=Envelope[RunSummary])
async def cancel_run_route(run_id: str, ctx: Member) -> JSONResponse:
    """Cancel the run: queued jobs now, running ones at their next heartbeat."""
    return await _steer(ctx, service.cancel_run, run_id)


@router.delete("/runs/{run_id}", response_model=Envelope[DeletedRun])
async def delete_run_route(run_id: str, ctx: Member) -> JSONResponse:
    """Delete the run with its jobs, events, scenarios, transcripts and judgments. A run
    under way (running, paused, summarizing) is refused with 409 RUN_ACTIVE: cancel it
    first; 409 CONFLICT while its cancelled jobs are still stopping."""
    async with ctx.db.transaction(immediate=True) as conn:
        deleted = await service.delete_run(conn, ctx.org_id, run_id, only_stopped=True)
    return ok({"id": deleted, "deleted": True})


@router.get("/status", response_model=Envelope[QueueStatus])
async def queue_status_route(ctx: Viewer) -> JSONResponse:
    """`valuerank queue status --json` for the caller's organisation: its jobs per state,
    per provider and per live run; the oldest wait; whether the whole queue (`paused`) or
    this organisation (`org_paused`) is paused. Rate limits and caps are shared by all."""
    async with ctx.db.transaction() as conn:
        status = await queue_status(conn, org_id=ctx.org_id)
    return ok(dump(status))


@router.post("/pause", response_model=Envelope[QueuePaused])
async def pause_queue_route(ctx: Admin) -> JSONResponse:
    """Stop claiming the organisation's jobs (every run, also those started later); running
    jobs finish. Other organisations are not affected. `changed` is false if it was paused."""
    async with ctx.db.transaction(immediate=True) as conn:
        changed = await pause_org(conn, ctx.org_id)
    return ok({"paused": True, "changed": changed})


@router.post("/resume", response_model=Envelope[QueuePaused])
async def resume_queue_route(ctx: Admin) -> JSONResponse:
    """Claim the organisation's jobs again after `POST /api/queue/pause`."""
    async with ctx.db.transaction(immediate=True) as conn:
        changed = await resume_org(conn, ctx.org_id)
    return ok({"paused": False, "changed": changed})


@router.get("/jobs/failed", response_model=Envelope[DeadJobPage])
async def failed_jobs_route(
    ctx: Viewer,
    run: Annotated[
        str | None, Query(min_length=1, max_length=100, description="Only this run's jobs.")
    ] = None,
    kind: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=100,
            description="Only jobs of this kind: probe, judge, summarize, finalize, "
            "analyze:basic, … (the seed's probe:scenario and summarize:run are accepted).",
        ),
    ] = None,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> JSONResponse:
    """The organisation's dead jobs, newest first: kind, run (its own jobs or its analyses),
    provider and model, attempts, the last error and every error with its category."""
    after = str(decode_cursor(cursor, arity=1)[0]) if cursor else None
    async with ctx.db.transaction() as conn:
        run_id = None if run is None else (await service.get_run(conn, ctx.org_id, run)).id
        found = await dead_jobs(
            conn, ctx.org_id, run_id=run_id, kind=kind, before_id=after, limit=limit + 1
        )
    items = dump(found)
    return ok(page("jobs", items, limit=limit, key=lambda item: [item["id"]]))


class RetryPartitionBody(Body):
    model_config = ConfigDict(extra="forbid", strict=True)

    partition: str = Field(
        min_length=1, max_length=200, pattern=NO_NUL, description="A partition, e.g. a run id."
    )


@router.post("/jobs/retry-failed")
async def retry_partition_route(body: RetryPartitionBody, ctx: Member) -> JSONResponse:
    """Send every failed job of one partition of the organisation back to the queue with
    fresh attempts, as `valuerank queue retry-failed --partition`: how many and their ids
    (none for another organisation's partition)."""
    async with ctx.db.transaction(immediate=True) as conn:
        ids = await requeue_failed(conn, ctx.org_id, partition=body.partition)
    return ok({"requeued": len(ids), "job_ids": ids})


@router.post("/jobs/{job_id}/retry", response_model=Envelope[RetriedJob])
async def retry_job_route(job_id: str, ctx: Member) -> JSONResponse:
    """Send one failed job back to the queue with fresh attempts (its run reopens, as with
    rerun-failed). 404 for an unknown job or another organisation's; 409 INVALID_TRANSITION
    unless it failed."""
    async with ctx.db.transaction(immediate=True) as conn:
        run = await service.retry_failed_job(conn, ctx.org_id, job_id)
    return ok({"job_id": job_id, "status": "queued", "run": run and run.summary_dict()})
