"""The UI's pages: installs every page router (runs, transcripts, queue, definitions, import
and export, analysis, settings, validation), the static files under /static and the HTML
error page."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import Response
from fastapi.staticfiles import StaticFiles

from valuerank.api.context import app_context
from valuerank.web.templating import STATIC_DIR, templates


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
        pages_exchange,
        pages_leaderboard,
        pages_matrix,
        pages_queue,
        pages_readings,
        pages_report,
        pages_runs,
        pages_settings,
        pages_transcripts,
        pages_validation,
    )

    for module in (
        pages_auth,
        pages_runs,
        pages_readings,
        pages_transcripts,
        pages_matrix,
        pages_queue,
        pages_definitions,
        pages_exchange,
        pages_leaderboard,
        pages_analysis,
        pages_report,
        pages_settings,
        pages_validation,
    ):
        app.include_router(module.router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    app_context(app).error_page = error_page
