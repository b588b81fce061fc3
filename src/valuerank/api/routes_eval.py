"""/api/eval/runs: the eval-run flow of the seed (async-eval-worker.md).

1. `POST /api/eval/runs` creates a run that is not on the queue yet (`pending`);
2. `POST /api/eval/runs/{id}/start` puts it there: `{"enqueued": true}` the first time,
   `{"enqueued": false}` when its jobs exist already (also under concurrent starts: only one
   inserts them); a completed, failed or cancelled run is rerun — its failed jobs requeued
   and the run reopened;
3. a worker runs the jobs; `GET /api/eval/runs/{id}/events` pages the run's events by
   sequence number (as `/api/runs/{id}/events`);
4. `POST /api/eval/runs/{id}/cancel` cancels it.
Another organisation's run is 404, like an unknown one.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from valuerank.api.deps import Member, Viewer
from valuerank.api.envelope import ok
from valuerank.api.pagination import EventsAfter, EventsLimit
from valuerank.api.run_bodies import RunSettingsBody, launch_from_body
from valuerank.api.schemas import Envelope
from valuerank.api.schemas.runs import EventPage, LaunchedRun, RunSummary, StartedRun
from valuerank.api.views import event_page
from valuerank.runs.progress import RunReport, read_report
from valuerank.runs.service import cancel_run
from valuerank.runs.starting import enqueue_run
from valuerank.shapes import dump

router = APIRouter(prefix="/api/eval/runs", tags=["eval"])


@router.post("", status_code=201, response_model=Envelope[LaunchedRun])
async def create_eval_run_route(body: RunSettingsBody, ctx: Member) -> JSONResponse:
    """Create a pending run (nothing enqueued): its scenarios, planned jobs, cost estimate.
    Models are checked as `POST /api/queue/runs` checks them; nothing is written on error."""
    async with ctx.db.transaction(immediate=True) as conn:
        data = await launch_from_body(conn, ctx.org_id, body, start=False)
    return ok(data, status_code=201)


@router.get("/{run_id}", response_model=Envelope[RunReport])
async def eval_run_route(run_id: str, ctx: Viewer) -> JSONResponse:
    """The run's status and progress (probe jobs per state, judging, cost, ETA, error)."""
    report = await read_report(ctx.db, ctx.org_id, run_id)
    return ok(dump(report))


@router.post("/{run_id}/start", response_model=Envelope[StartedRun])
async def start_eval_run_route(run_id: str, ctx: Member) -> JSONResponse:
    """Enqueue the run's jobs. `enqueued` is true when this call put jobs on the queue (a
    pending run started, or a terminal run's failed jobs rerun), false when they were there
    already: calling it again, or concurrently, enqueues nothing twice."""
    async with ctx.db.transaction(immediate=True) as conn:
        result = await enqueue_run(conn, ctx.org_id, run_id)
    return ok(result.to_dict())


@router.get("/{run_id}/events", response_model=Envelope[EventPage])
async def eval_run_events_route(
    run_id: str,
    ctx: Viewer,
    after: EventsAfter = 0,
    limit: EventsLimit = 100,
) -> JSONResponse:
    """A page of the run's events: pass `next_after` back as `after` for the next page."""
    return ok(await event_page(ctx.db, ctx.org_id, run_id, after=after, limit=limit))


@router.post("/{run_id}/cancel", response_model=Envelope[RunSummary])
async def cancel_eval_run_route(run_id: str, ctx: Member) -> JSONResponse:
    """Cancel the run: queued jobs now, running ones at their next heartbeat (cancelling a
    cancelled run changes nothing; 409 for a completed or failed one)."""
    async with ctx.db.transaction(immediate=True) as conn:
        run = await cancel_run(conn, ctx.org_id, run_id)
    return ok(run.summary_dict())
