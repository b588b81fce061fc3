"""/api/runs: the organisation's runs (filtered, cursor pages), one run's report and results
(with the actions valid for it now), its probe jobs per model and per provider, its failed
jobs with their errors, its events (cursor and Server-Sent Events); growing a sampled run,
rerunning its failed jobs and judging it again (as `valuerank runs expand|rerun-failed|judge`).
Another organisation's run is 404, like an unknown one."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Query
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import ConfigDict, Field

from valuerank.api.deps import Member, Viewer
from valuerank.api.envelope import ok
from valuerank.api.fields import INT32_MAX, Body, IsoDateTime
from valuerank.api.pagination import Cursor, EventsAfter, EventsLimit, Limit, after_created, page
from valuerank.api.run_bodies import ModelId
from valuerank.api.schemas import Envelope
from valuerank.api.schemas.runs import (
    EventPage,
    ExpandedRun,
    FailurePage,
    JudgedRun,
    RequeuedRun,
    RunPage,
    RunSummary,
)
from valuerank.api.sse import run_event_stream
from valuerank.api.views import (
    RunDetail,
    event_page,
    load_breakdown,
    load_failures,
    load_run,
    load_run_page,
    run_item,
)
from valuerank.org_defaults import MAX_JUDGES
from valuerank.pipeline.rejudge import judge_run
from valuerank.runs.breakdown import Breakdown
from valuerank.runs.listing import RunFilter
from valuerank.runs.service import MAX_RUN_NAME, expand_run, get_run, rename_run, rerun_failed
from valuerank.runs.states import RunStatus
from valuerank.shapes import dump

router = APIRouter(prefix="/api/runs", tags=["runs"])


class JudgeBody(Body):
    model_config = ConfigDict(extra="forbid", strict=True)

    judges: list[ModelId] = Field(
        min_length=1, max_length=MAX_JUDGES, description="`provider:model`."
    )
    replace: bool = Field(
        default=False,
        description="The run's judges become exactly `judges`; the others' judgments are removed.",
    )
    allow_unknown_models: bool = Field(
        default=False, description="Judges the registry does not know (a known provider's)."
    )


class RenameBody(Body):
    model_config = ConfigDict(extra="forbid", strict=True)

    name: str = Field(
        min_length=1,
        max_length=MAX_RUN_NAME,
        description="The run's new name (whitespace runs become one space).",
    )


class ExpandBody(Body):
    model_config = ConfigDict(extra="forbid", strict=True)

    sample_percentage: float = Field(gt=0, le=100, description="The new, larger share.")


@router.get("", response_model=Envelope[RunPage])
async def list_runs_route(
    ctx: Viewer,
    limit: Limit = 100,
    cursor: Cursor = None,
    status: Annotated[RunStatus | None, Query(description="Only runs in this state.")] = None,
    definition: Annotated[
        str | None,
        Query(
            max_length=100,
            description="Only runs of this definition version (id or unique prefix; 404 "
            "unless it is the organisation's).",
        ),
    ] = None,
    model: Annotated[
        str | None, Query(max_length=300, description="Only runs with this target model.")
    ] = None,
    created_since: Annotated[
        IsoDateTime | None, Query(description="Created at or after (ISO-8601; naive = UTC).")
    ] = None,
    created_until: Annotated[
        IsoDateTime | None, Query(description="Created at or before (ISO-8601; naive = UTC).")
    ] = None,
) -> JSONResponse:
    """The newest runs first, each with its status and probe progress; pass `next_cursor`
    back as `cursor` (with the same filters) for the next page."""
    filters = RunFilter(status, definition, model, created_since, created_until)
    reports = await load_run_page(
        ctx.db, ctx.org_id, limit=limit, filters=filters, after=after_created(cursor)
    )
    items = [run_item(r) for r in reports]
    return ok(page("runs", items, limit=limit, key=lambda r: [r["created_at"], r["id"]]))


@router.get("/{run_id}", response_model=Envelope[RunDetail])
async def get_run_route(run_id: str, ctx: Viewer) -> JSONResponse:
    """A run (id or unique prefix): status, progress, cost, ETA, summary, results per model,
    and `actions`: what may be done with it now (`start`, `pause`, `resume`, `cancel`,
    `rerun_failed`, `expand`, `delete`; see valuerank.runs.actions)."""
    detail = await load_run(ctx.db, ctx.org_id, run_id)
    return ok(dump(detail))


@router.get("/{run_id}/breakdown", response_model=Envelope[Breakdown])
async def run_breakdown_route(run_id: str, ctx: Viewer) -> JSONResponse:
    """The run's probe jobs per target model and per provider, each with its counts per
    state (`total`, `queued`, `running`, `completed`, `failed`, `cancelled`, `done`); every
    model of the run is listed, with zeros before its jobs exist."""
    return ok(dump(await load_breakdown(ctx.db, ctx.org_id, run_id)))


@router.get("/{run_id}/failures", response_model=Envelope[FailurePage])
async def run_failures_route(
    run_id: str, ctx: Viewer, limit: Limit = 50, cursor: Cursor = None
) -> JSONResponse:
    """The run's failed jobs (probe, judge, summarize), newest first, each with its kind,
    scenario, model, attempts and the error that ended it; `rerun-failed` requeues them."""
    found = await load_failures(
        ctx.db, ctx.org_id, run_id, limit=limit, after=after_created(cursor)
    )
    items = dump(found)
    return ok(page("failures", items, limit=limit, key=lambda f: [f["created_at"], f["job_id"]]))


@router.get("/{run_id}/events", response_model=Envelope[EventPage])
async def run_events_route(
    run_id: str,
    ctx: Viewer,
    after: EventsAfter = 0,
    limit: EventsLimit = 100,
) -> JSONResponse:
    """A page of the run's events: pass `next_after` back as `after` for the next page."""
    return ok(await event_page(ctx.db, ctx.org_id, run_id, after=after, limit=limit))


@router.get(
    "/{run_id}/events/stream",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "The events."}},
)
async def run_events_stream_route(
    run_id: str,
    ctx: Viewer,
    after: Annotated[int, Query(ge=0, le=INT32_MAX, description="Start after this seq.")] = 0,
    last_event_id: Annotated[
        int | None,
        Header(alias="Last-Event-ID", ge=0, le=INT32_MAX, description="Resume after this seq."),
    ] = None,
    snapshots: Annotated[
        bool,
        Query(description="Also send `event: snapshot`: the run, its breakdown, a sections key."),
    ] = False,
) -> StreamingResponse:
    """Server-Sent Events of the run until it ends (`event: end`): `task_complete`,
    `task_failed` (with `scenario_id`, `model`, `progress` of the run's probes),
    `run_complete` and the run's pauses, as the progress WebSocket sends them; resumes after
    `Last-Event-ID` (or `after`). `snapshots=true` adds the run's state as it changes
    (debounced; one last before `end`), which is all the run page needs (api/sse.py)."""
    async with ctx.db.transaction() as conn:
        run = await get_run(conn, ctx.org_id, run_id)  # 404 before any byte is streamed
    start = last_event_id if last_event_id is not None else after
    return StreamingResponse(
        run_event_stream(
            ctx.app.waker, ctx.org_id, run.id, start, stop=ctx.stopping, snapshots=snapshots
        ),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


@router.patch("/{run_id}", response_model=Envelope[RunSummary])
async def rename_run_route(run_id: str, body: RenameBody, ctx: Member) -> JSONResponse:
    """Rename the run (`{"name": …}`), whatever its state; answers who it now is."""
    async with ctx.db.transaction(immediate=True) as conn:
        run = await rename_run(conn, ctx.org_id, run_id, body.name)
    return ok(run.summary_dict())


@router.post("/{run_id}/expand", response_model=Envelope[ExpandedRun])
async def expand_run_route(run_id: str, body: ExpandBody, ctx: Member) -> JSONResponse:
    """Grow a sampled run to a larger `sample_percentage`: the nested sample keeps the
    scenarios it has and only the ones it adds are enqueued (a finished run reopens).
    409 CONFLICT unless the share is larger than the run's."""
    async with ctx.db.transaction(immediate=True) as conn:
        run, added = await expand_run(conn, ctx.org_id, run_id, body.sample_percentage)
    return ok({**run.summary_dict(), "scenarios_added": added})


@router.post("/{run_id}/rerun-failed", response_model=Envelope[RequeuedRun])
async def rerun_failed_route(run_id: str, ctx: Member) -> JSONResponse:
    """Send the run's failed jobs back to the queue with fresh attempts (the run reopens
    when there were some); 409 for a run never started."""
    async with ctx.db.transaction(immediate=True) as conn:
        run, count = await rerun_failed(conn, ctx.org_id, run_id)
    return ok({**run.summary_dict(), "requeued": count})


@router.post("/{run_id}/judge", response_model=Envelope[JudgedRun])
async def judge_run_route(run_id: str, body: JudgeBody, ctx: Member) -> JSONResponse:
    """Judge a finished run's stored transcripts (again) without asking its target models:
    `judges` join the run's, or (`replace`) become its only judges, the others' judgments
    removed. The run reopens and its analysis recomputes when the judges are done. 409 for a
    run not ended or without transcripts; 422 UNKNOWN_MODEL / INVALID_INPUT for a bad judge,
    MISSING_CREDENTIAL for a provider without a key."""
    async with ctx.db.transaction(immediate=True) as conn:
        done = await judge_run(
            conn,
            ctx.org_id,
            run_id,
            body.judges,
            replace=body.replace,
            allow_unknown_models=body.allow_unknown_models,
        )
    return ok(done.to_dict())
