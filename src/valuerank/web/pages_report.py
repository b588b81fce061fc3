"""The analysis page's download: `GET /runs/{id}/report.html` is the same self-contained
report `valuerank report` writes, as an attachment (`?baseline=RUN` adds the comparison).
Scoped to the viewer's organisation: another organisation's run is NOT_FOUND."""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import Response

from valuerank.api.deps import Viewer
from valuerank.report.loading import build_report

router = APIRouter(include_in_schema=False)


@router.get("/runs/{run_id}/report.html")
async def report_download(
    run_id: str,
    ctx: Viewer,
    baseline: Annotated[str | None, Query(max_length=100)] = None,
) -> Response:
    doc, html = await build_report(ctx.db, ctx.org_id, run_id, baseline=baseline or None)
    # Only safe characters in the header, whatever an id holds.
    name = f"report-{re.sub(r'[^A-Za-z0-9_-]', '', doc.run.short_id)}.html"
    return Response(
        content=html.encode("utf-8"),
        media_type="text/html; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )
