"""`valuerank report RUN -o report.html`: the run's findings as one self-contained HTML file.

The analysis comes from the cache while the run's inputs match (as `valuerank analyze`), the
comparison with `--baseline` is reused when one of the same inputs was completed (as
`valuerank compare`); the figures are drawn once, then the file is written all at once.
With VALUERANK_API_URL set the server builds it (`GET /api/runs/{id}/report`) and its bytes
are written here the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from valuerank.cli.common import (
    JsonOption,
    console,
    database,
    err_console,
    local_or_server,
    print_json,
    write_atomically,
)
from valuerank.client import ApiClient, ApiError
from valuerank.client.analysis import fetch_report
from valuerank.errors import ValueRankError

STEPS = {
    "analysis": "Loading the run's analysis (computed now unless cached)…",
    "comparison": "Comparing with the baseline run…",
    "figures": "Drawing the figures…",
    "rendering": "Writing the report…",
}


def report(
    run_id: str = typer.Argument(..., help="Run id or prefix."),
    output: Path | None = typer.Option(
        None, "--output", "-o", help="The HTML file to write (default: report-<run id>.html)."
    ),
    baseline: str | None = typer.Option(
        None, "--baseline", help="Also compare with this run (id or prefix) as the baseline."
    ),
    as_json: bool = JsonOption,
) -> None:
    """A run's findings as one self-contained HTML file (inline SVG, no network, printable).

    With VALUERANK_API_URL set the server builds it; the file is written here."""
    # The status goes to stderr: with --json, stdout carries the JSON only.
    with err_console.status(STEPS["analysis"]) as status:

        def progress(step: str) -> None:
            status.update(STEPS.get(step, step))

        async def _go() -> dict[str, Any]:
            from valuerank.report.loading import build_report

            async with database() as opened:
                doc, html = await build_report(
                    opened.db, opened.org_id, run_id, baseline=baseline, progress=progress
                )
            return _written(
                output or Path(f"report-{doc.run.short_id}.html"),
                html.encode("utf-8"),
                run_id=doc.run.id,
                baseline_run_id=None if doc.comparison is None else doc.comparison.baseline.id,
                figures=doc.figure_bytes(),
            )

        def _remote(server: ApiClient) -> dict[str, Any]:
            status.update(f"Asking {server.base_url} for the report…")
            got = fetch_report(server, run_id, baseline=baseline)
            try:
                return _written(
                    output or Path(got.file_name),
                    got.html,
                    run_id=got.run_id,
                    baseline_run_id=got.baseline_run_id,
                    figures=got.figures,
                )
            except ValueRankError as exc:  # OUTPUT_NOT_WRITTEN, shown as a server's error is
                raise ApiError(exc.message, code=exc.code, hint=exc.hint) from exc

        data = local_or_server(_go, _remote, as_json=as_json)
    if as_json:
        print_json(data)
        return
    console.print(f"report: {data['path']} ({data['bytes'] / 1024:.0f} KiB)")


def _written(
    path: Path,
    html: bytes,
    *,
    run_id: str,
    baseline_run_id: str | None,
    figures: dict[str, int],
) -> dict[str, Any]:
    """Write the report all at once; what `report --json` prints about it."""
    write_atomically(path, html)
    return {
        "success": True,
        "path": str(path.resolve()),
        "run_id": run_id,
        "baseline_run_id": baseline_run_id,
        "bytes": len(html),
        "figures": figures,
    }


def register(app: typer.Typer) -> None:
    app.command("report")(report)
