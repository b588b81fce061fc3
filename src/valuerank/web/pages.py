"""The UI's pages: `/` lists the runs, `/runs/{id}` shows one run with live progress (SSE),
its per-model results, a chart of mean decisions and the summary. Static files under /static."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from markupsafe import Markup

from valuerank.api.deps import Viewer
from valuerank.api.views import load_run, load_runs
from valuerank.web.charts import mean_decision_chart
from valuerank.web.templating import STATIC_DIR, templates

router = APIRouter(include_in_schema=False)


@router.get("/", response_class=HTMLResponse)
async def index(request: Request, ctx: Viewer) -> Response:
    reports = await load_runs(ctx.db, ctx.org_id, limit=200)
    return templates.TemplateResponse(request, "index.html", {"reports": reports})


@router.get("/runs/{run_id}", response_class=HTMLResponse)
async def run_page(request: Request, run_id: str, ctx: Viewer) -> Response:
    detail = await load_run(ctx.db, ctx.org_id, run_id)
    # The chart escapes every text it holds (web/charts.py): safe to embed as markup.
    chart = Markup(mean_decision_chart(detail.results))
    return templates.TemplateResponse(
        request,
        "run.html",
        {
            "report": detail.report,
            "run": detail.report.run,
            "results": detail.results,
            "chart": chart,
        },
    )


def error_page(
    request: Request, status_code: int, code: str, message: str, hint: str | None
) -> Response:
    return templates.TemplateResponse(
        request,
        "error.html",
        {"status_code": status_code, "code": code, "message": message, "hint": hint},
        status_code=status_code,
    )


def install(app: FastAPI) -> None:
    """Add the pages, the static files and the HTML error page to `app`."""
    from valuerank.web import (
        pages_analysis,
        pages_auth,
        pages_definitions,
        pages_queue,
        pages_runs,
        pages_settings,
        pages_validation,
    )

    app.include_router(router)
    for module in (
        pages_auth,
        pages_runs,
        pages_queue,
        pages_definitions,
        pages_analysis,
        pages_settings,
        pages_validation,
    ):
        app.include_router(module.router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    app.state.error_page = error_page
