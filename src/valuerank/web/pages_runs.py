"""Run pages: the dashboard `/` (every run with its status, live progress, cost and models;
filters and cursor pages), the new-run form `/runs/new` (cost estimate before starting) and a
run `/runs/{id}` (controls, progress per model and provider, failures, live event log, results,
summary). `/runs/{id}/sections` is the part of a run's page the page's script swaps in as the
run moves on (results, chart, failures, summary), rendered by the same template; its
`X-Sections-Key` header names what it was drawn from, as the run's stream does.

Reads call the services the API calls; every action happens in the page's JavaScript
through the JSON API (static/runs.js, static/run.js)."""

from __future__ import annotations

import os
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response
from markupsafe import Markup

from valuerank.api.deps import Viewer
from valuerank.api.pagination import MAX_CURSOR_LENGTH, Limit, after_created, page
from valuerank.api.sse import sections_key
from valuerank.api.views import RunDetail, load_run, load_run_page, run_item
from valuerank.credentials.store import list_credentials
from valuerank.db import Database
from valuerank.default_rubric import rubric_for_judges
from valuerank.definitions.service import list_definitions
from valuerank.errors import InvalidInputError
from valuerank.findings.loading import sample_basis
from valuerank.org_defaults import get_org_defaults
from valuerank.providers.presets import UnknownProvider, preset_for
from valuerank.queue.events import last_seq
from valuerank.registry.service import RegisteredModel, ensure_registry, list_models
from valuerank.runs.actions import run_actions
from valuerank.runs.breakdown import count_failures, run_breakdown, run_failures
from valuerank.runs.listing import RunFilter
from valuerank.runs.states import RunStatus
from valuerank.web.charts import mean_decision_chart
from valuerank.web.templating import templates

router = APIRouter(include_in_schema=False)

PAGE_SIZE = 50
FAILURES_SHOWN = 20
# The event log opens on the run's latest events (the live stream replays from there).
EVENTS_REPLAYED = 200

Text = Annotated[str | None, Query(max_length=300)]


def run_filter(status: str | None, definition: str | None, model: str | None) -> RunFilter:
    """The dashboard's filters from its form (an empty field: any)."""
    chosen: RunStatus | None = None
    if status:
        try:
            chosen = RunStatus(status)
        except ValueError:
            raise InvalidInputError(
                f"unknown run status {status!r}",
                hint=f"one of: {', '.join(s.value for s in RunStatus)}",
            ) from None
    return RunFilter(status=chosen, definition_id=definition or None, model=model or None)


async def _dashboard(
    ctx: Viewer,
    status: str | None,
    definition: str | None,
    model: str | None,
    cursor: str | None,
    limit: int,
) -> dict[str, Any]:
    """The dashboard's page of runs, its filters, and the URL its script polls."""
    reports = await load_run_page(
        ctx.db,
        ctx.org_id,
        limit=limit,
        filters=run_filter(status, definition, model),
        after=after_created(cursor),
    )
    listed = page(
        "runs",
        [run_item(r) for r in reports],
        limit=limit,
        key=lambda r: [r["created_at"], r["id"]],
    )
    await ensure_registry(ctx.db)  # an empty registry gets the catalog
    async with ctx.db.transaction() as conn:
        versions = await list_definitions(conn, ctx.org_id)
        registry = await list_models(conn, active_only=True)
    chosen = (("status", status), ("definition", definition), ("model", model))
    filters: dict[str, str | int] = {k: v for k, v in chosen if v}
    if limit != PAGE_SIZE:
        filters["limit"] = limit  # kept by the form and the pager
    # The page's script polls the same list: these filters, this page.
    poll = urlencode({**filters, "limit": limit, **({"cursor": cursor} if cursor else {})})
    shown_models = {m for r in reports for m in r.run.config.models}
    return {
        "reports": reports[:limit],
        "next_cursor": listed["next_cursor"],
        "paged": cursor is not None,
        "filters": filters,
        "poll_url": f"/api/runs?{poll}",
        "filtered": any(k != "limit" for k in filters),
        "statuses": [s.value for s in RunStatus],
        "versions": versions,
        "known_models": sorted(shown_models | {m.id for m in registry}),
    }


@router.get("/", response_class=HTMLResponse)
async def index(
    request: Request,
    ctx: Viewer,
    status: Text = None,
    definition: Text = None,
    model: Text = None,
    cursor: Annotated[str | None, Query(max_length=MAX_CURSOR_LENGTH)] = None,
    limit: Limit = PAGE_SIZE,
) -> Response:
    context = await _dashboard(ctx, status, definition, model, cursor, limit)
    return templates.TemplateResponse(request, "index.html", context)


def _provider_groups(registry: list[RegisteredModel], keyed: set[str]) -> list[dict[str, Any]]:
    """The registry's models by provider, each provider saying whether it has a key here."""
    groups: dict[str, list[RegisteredModel]] = {}
    for model in registry:
        groups.setdefault(model.provider, []).append(model)
    found = []
    for provider, members in groups.items():
        try:
            needs_key = preset_for(provider).needs_key
        except UnknownProvider:
            needs_key = True
        found.append(
            {"provider": provider, "models": members, "ready": not needs_key or provider in keyed}
        )
    return found


@router.get("/runs/new", response_class=HTMLResponse)
async def new_run_page(
    request: Request,
    ctx: Viewer,
    definition: Annotated[str | None, Query(max_length=100)] = None,
) -> Response:
    await ensure_registry(ctx.db)  # an empty registry gets the catalog
    async with ctx.db.transaction() as conn:
        versions = await list_definitions(conn, ctx.org_id)
        registry = await list_models(conn, active_only=True)
        stored = await list_credentials(conn, ctx.org_id, environ=os.environ, env_hints=False)
        judge_rubric = await rubric_for_judges(conn, ctx.org_id, store=False)
    groups = _provider_groups(registry, {c.provider for c in stored})
    newest_first = sorted(versions, key=lambda s: s.version.created_at, reverse=True)
    return templates.TemplateResponse(
        request,
        "runs_new.html",
        {
            "versions": newest_first,
            "selected": definition or (newest_first[0].version.id if newest_first else None),
            "groups": groups,
            "judge_rubric": judge_rubric,
        },
    )


async def _sections(db: Database, detail: RunDetail) -> dict[str, Any]:
    """What the changing parts of a run's page show: results, chart, failures, summary."""
    run = detail.run
    async with db.transaction() as conn:
        failures = await run_failures(conn, run, limit=FAILURES_SHOWN)
        failed = await count_failures(conn, run)
        basis = await sample_basis(conn, run)
    # The chart escapes every text it holds (web/charts.py): safe to embed as markup.
    chart = Markup(mean_decision_chart(detail.results)) if detail.results else None
    return {
        "run": run,
        "results": detail.results,
        "chart": chart,
        "failures": failures[:FAILURES_SHOWN],
        "failed_total": failed,
        "basis": basis,
        # What they were drawn from: the page's stream says when a redraw is due (api/sse.py).
        "sections_key": sections_key(detail, failed),
    }


@router.get("/runs/{run_id}", response_class=HTMLResponse)
async def run_page(request: Request, run_id: str, ctx: Viewer) -> Response:
    detail = await load_run(ctx.db, ctx.org_id, run_id)
    run = detail.run
    async with ctx.db.transaction() as conn:
        breakdown = await run_breakdown(conn, run)
        newest = await last_seq(conn, run.id)
        defaults = await get_org_defaults(conn, ctx.org_id)
    actions = run_actions(detail)
    return templates.TemplateResponse(
        request,
        "run.html",
        {
            **await _sections(ctx.db, detail),
            "report": detail,
            "breakdown": breakdown,
            "actions": {a.value for a in actions},
            "events_after": max(0, newest - EVENTS_REPLAYED),
            # What the judge form offers: the run's judges, else the organisation's defaults.
            "judges_offered": run.config.judge_models or defaults.judge_models,
        },
    )


@router.get("/runs/{run_id}/sections", response_class=HTMLResponse)
async def run_sections(request: Request, run_id: str, ctx: Viewer) -> Response:
    detail = await load_run(ctx.db, ctx.org_id, run_id)
    context = await _sections(ctx.db, detail)
    response = templates.TemplateResponse(request, "run_sections.html", context)
    response.headers["X-Sections-Key"] = context["sections_key"]
    response.headers["Cache-Control"] = "no-store"  # always the run as it is now
    return response
