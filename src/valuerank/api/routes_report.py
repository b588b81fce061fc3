"""`GET /api/runs/{id}/report`: the run's findings as one self-contained HTML file, the one
`valuerank report` writes (report/loading.py): the analysis from the cache while the run's
inputs match, with `?baseline=` the comparison with that run (reused when one of the same
inputs was completed). Like the analysis read, a cache miss computes (and stores) here.

The file comes as an attachment (`report-<short id>.html`); headers say what it holds, so a
client need not parse it: `X-ValueRank-Run-Id`, `X-ValueRank-Baseline-Run-Id` (absent without
a baseline) and `X-ValueRank-Figures` (JSON: figure name → bytes of its inline SVG).
Another organisation's run is 404, like an unknown one; a run with nothing to report is 422
NO_TRANSCRIPTS."""

from __future__ import annotations

import json
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import Response

from valuerank.api.deps import Viewer

router = APIRouter(tags=["analysis"])

RUN_HEADER = "X-ValueRank-Run-Id"
BASELINE_HEADER = "X-ValueRank-Baseline-Run-Id"
FIGURES_HEADER = "X-ValueRank-Figures"


@router.get(
    "/api/runs/{run_id}/report",
    response_class=Response,
    responses={200: {"content": {"text/html": {}}, "description": "The report, one HTML file."}},
)
async def report_route(
    run_id: str,
    ctx: Viewer,
    baseline: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=100,
            description="Also compare with this run (id or prefix) as the baseline.",
        ),
    ] = None,
) -> Response:
    """The run's report as `valuerank report RUN` writes it (inline SVG, no network)."""
    from valuerank.report.loading import build_report  # the figures: only when asked

    doc, html = await build_report(ctx.db, ctx.org_id, run_id, baseline=baseline)
    headers = {
        "Content-Disposition": f'attachment; filename="report-{doc.run.short_id}.html"',
        RUN_HEADER: doc.run.id,
        FIGURES_HEADER: json.dumps(doc.figure_bytes(), ensure_ascii=True),
    }
    if doc.comparison is not None:
        headers[BASELINE_HEADER] = doc.comparison.baseline.id
    return Response(html.encode("utf-8"), media_type="text/html; charset=utf-8", headers=headers)
