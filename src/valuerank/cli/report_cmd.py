"""`valuerank report RUN -o report.html`: the run's findings as one self-contained HTML file.

The analysis comes from the cache while the run's inputs match (as `valuerank analyze`), the
comparison with `--baseline` is reused when one of the same inputs was completed (as
`valuerank compare`); the figures are drawn once, then the file is written all at once.
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
    print_json,
    run,
    write_atomically,
)

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
    """A run's findings as one self-contained HTML file (inline SVG, no network, printable)."""
    from valuerank.report.loading import build_report

    # The status goes to stderr: with --json, stdout carries the JSON only.
    with err_console.status(STEPS["analysis"]) as status:

        def progress(step: str) -> None:
            status.update(STEPS.get(step, step))

        async def _go() -> dict[str, Any]:
            async with database() as opened:
                doc, html = await build_report(
                    opened.db, opened.org_id, run_id, baseline=baseline, progress=progress
                )
            path = output if output is not None else Path(f"report-{doc.run.short_id}.html")
            data = html.encode("utf-8")
            write_atomically(path, data)
            return {
                "success": True,
                "path": str(path.resolve()),
                "run_id": doc.run.id,
                "baseline_run_id": None if doc.comparison is None else doc.comparison.baseline.id,
                "bytes": len(data),
                "figures": {name: len(svg.encode("utf-8")) for name, svg in doc.figures.items()},
            }

        data = run(_go(), as_json=as_json)
    if as_json:
        print_json(data)
        return
    console.print(f"report: {data['path']} ({data['bytes'] / 1024:.0f} KiB)")


def register(app: typer.Typer) -> None:
    app.command("report")(report)
