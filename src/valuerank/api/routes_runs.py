"""/api/runs: the organisation's runs, one run's report and results, its events (cursor and
Server-Sent Events). Another organisation's run is 404, like an unknown one."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Query
from fastapi.responses import JSONResponse, StreamingResponse

from valuerank.api.deps import Viewer
from valuerank.api.envelope import ok
from valuerank.api.sse import run_event_stream
from valuerank.api.views import event_dict, load_run, load_runs, run_item
from valuerank.queue.events import events_after
from valuerank.runs.service import get_run

router = APIRouter(prefix="/api/runs", tags=["runs"])


@router.get("")
async def list_runs_route(
    ctx: Viewer, limit: Annotated[int, Query(ge=1, le=500)] = 100
) -> JSONResponse:
    """The newest runs first, each with its status and probe progress."""
    reports = await load_runs(ctx.db, ctx.org_id, limit=limit)
    return ok({"runs": [run_item(r) for r in reports], "count": len(reports)})


@router.get("/{run_id}")
async def get_run_route(run_id: str, ctx: Viewer) -> JSONResponse:
    """A run (id or unique prefix): status, progress, cost, ETA, summary, results per model."""
    detail = await load_run(ctx.db, ctx.org_id, run_id)
    return ok(detail.to_dict())


@router.get("/{run_id}/events")
async def run_events_route(
    run_id: str,
    ctx: Viewer,
    after: Annotated[int, Query(ge=0, description="Return events with seq > after.")] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> JSONResponse:
    """A page of the run's events: pass `next_after` back as `after` for the next page."""
    async with ctx.db.transaction() as conn:
        run = await get_run(conn, ctx.org_id, run_id)
        batch = await events_after(conn, run.id, after, limit, org_id=ctx.org_id)
    return ok(
        {
            "run_id": run.id,
            "status": run.status.value,
            "terminal": run.status.terminal,
            "events": [event_dict(e) for e in batch],
            "after": after,
            "next_after": batch[-1].seq if batch else after,
            "has_more": len(batch) == limit,
        }
    )


@router.get("/{run_id}/events/stream", response_class=StreamingResponse)
async def run_events_stream_route(
    run_id: str,
    ctx: Viewer,
    after: Annotated[int, Query(ge=0, description="Start after this seq.")] = 0,
    last_event_id: Annotated[
        int | None, Header(alias="Last-Event-ID", ge=0, description="Resume after this seq.")
    ] = None,
) -> StreamingResponse:
    """Server-Sent Events of the run until it ends (`event: end`): `task_complete`,
    `task_failed` (with `scenario_id`, `model`, `progress` of the run's probes),
    `run_complete` and the run's pauses, as the progress WebSocket sends them; resumes after
    `Last-Event-ID` (or `after`)."""
    async with ctx.db.transaction() as conn:
        run = await get_run(conn, ctx.org_id, run_id)  # 404 before any byte is streamed
    start = last_event_id if last_event_id is not None else after
    return StreamingResponse(
        run_event_stream(ctx.app.waker, ctx.org_id, run.id, start, stop=ctx.stopping),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
