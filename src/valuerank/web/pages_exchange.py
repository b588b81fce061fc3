"""The import and export page: upload the original CLI's files (a definition `.md`, a run
ZIP or a CLI run folder zipped, a workspace ZIP, a values rubric, a transcript) and download
exports (a run ZIP, a definition `.md` or its lineage ZIP, the workspace ZIP).

The page only lists what can be exported; the upload and the downloads go through the JSON
API (`POST /api/import`, `POST /api/export/…`, routes_exchange.py) from its script
(static/setup.js), so the API's limits and error codes apply and are shown as it answers."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from valuerank.api.deps import Viewer
from valuerank.api.views import load_runs
from valuerank.definitions.service import list_definitions
from valuerank.web.templating import templates

router = APIRouter(include_in_schema=False)
RUNS_LISTED = 200


@router.get("/exchange", response_class=HTMLResponse)
async def exchange_page(request: Request, ctx: Viewer) -> Response:
    runs = [report.run for report in await load_runs(ctx.db, ctx.org_id, limit=RUNS_LISTED)]
    async with ctx.db.transaction() as conn:
        definitions = await list_definitions(conn, ctx.org_id)
    # The app's own upload limit (the max_upload_bytes setting), so the page can say it.
    limit = ctx.settings.max_upload_bytes
    return templates.TemplateResponse(
        request,
        "exchange.html",
        {
            "runs": runs,
            "definitions": definitions,
            "max_upload_bytes": limit,
            "max_upload_mib": limit / (1024 * 1024),
        },
    )
