"""`valuerank demo`: the whole product in one command on the embedded default.

Imports the bundled example definition, runs a sampled run against the embedded local model
(and two synthetic scripted personas, labelled as such, so the table has contrast), shows a
live progress bar with the jobs running in this process, waits for the analysis a completed
run gets (the `analyze:basic` job its last step enqueues), prints the per-model results and
the value sensitivities (what moves each model, from its decisions alone) with each model's
order effect and value ranks with intervals beside its results, and starts the
server with the URL of the run's analysis page to open.
"""

from __future__ import annotations

import asyncio
import time
from importlib import resources
from typing import Any

import typer

from valuerank.cli.analysis_view import sensitivity_lines, sensitivity_table
from valuerank.cli.common import JsonOption, console, database, print_json, run
from valuerank.cli.live import in_process_worker, report_json, results_table, wait_for_run
from valuerank.db import Database
from valuerank.definitions.service import import_definition
from valuerank.pipeline.analyze import ANALYZE_BASIC
from valuerank.pipeline.launch import launch_run
from valuerank.refs import short_id
from valuerank.runs.config import RunConfig
from valuerank.runs.partitions import analysis_partition
from valuerank.runs.progress import job_progress
from valuerank.runs.results import model_results
from valuerank.runs.states import RunStatus

DEMO_DEFINITION = "exp-demo-whistleblower.md"
DEMO_MODELS = ("local:gemma3-270m", "scripted:utilitarian", "scripted:deontologist")
ANALYSIS_WAIT_SECONDS = 120.0


def demo_definition_text() -> str:
    return resources.files("valuerank.demo").joinpath(DEMO_DEFINITION).read_text("utf-8")


async def wait_for_analysis(db: Database, run_id: str, *, timeout: float) -> bool:
    """Wait (the worker running) until the completed run's basic analysis job is done;
    True if it succeeded. Its result is stored, so the analysis page serves it at once."""
    deadline = time.monotonic() + timeout
    while True:
        async with db.transaction() as conn:
            jobs = await job_progress(conn, analysis_partition(run_id), (ANALYZE_BASIC,))
        if jobs.total and not jobs.active:
            return jobs.completed > 0
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.1)


async def demo_sensitivity(db: Database, org_id: str, run_id: str) -> dict[str, Any]:
    """The analysis' value sensitivities, robustness and scale (stored by the run's analysis
    job)."""
    from valuerank.findings.analyses import run_analysis

    analysis = (await run_analysis(db, org_id, run_id)).analysis
    return {key: analysis.get(key) for key in ("valueSensitivity", "robustness", "scaleLabels")}


def landing_path(run_id: str, analysed: bool) -> str:
    """Where the printed URL lands: the run's analysis, or the run when it has none."""
    return f"runs/{run_id}/analysis" if analysed else f"runs/{run_id}"


def demo(
    model: list[str] = typer.Option(
        list(DEMO_MODELS), "--model", "-m", help="Models to run (default: local + 2 synthetic)."
    ),
    sample_percentage: float = typer.Option(
        15.0, "--sample-percentage", help="Share of the 27 scenarios to run."
    ),
    max_tokens: int = typer.Option(160, "--max-tokens", help="Answer limit per turn."),
    serve_after: bool = typer.Option(
        True, "--serve/--no-serve", help="Start the server afterwards (--no-serve: just exit)."
    ),
    host: str = typer.Option("127.0.0.1", "--host", help="Where the server listens."),
    port: int = typer.Option(8000, "--port"),
    as_json: bool = JsonOption,
) -> None:
    """Run a sampled example run on the embedded default and show the results."""

    async def _go() -> dict[str, Any]:
        async with database(local_only=True) as opened:
            db, org_id = opened.db, opened.org_id
            async with db.transaction() as conn:
                stored, _ = await import_definition(
                    conn, org_id, demo_definition_text(), source_file=DEMO_DEFINITION
                )
                config = RunConfig(
                    models=tuple(model),
                    sample_percentage=sample_percentage,
                    followup_turns=0,
                    max_tokens=max_tokens,
                    # Both orders: the printed table separates a value from a position bias.
                    scale_order="both",
                )
                launched = await launch_run(conn, org_id, stored.version.id, config, name="demo")
            run_id = launched.created.run.id
            if not as_json:
                console.print(
                    f"[bold]demo run[/] {short_id(run_id)}: "
                    f"{launched.created.scenarios} scenarios × "
                    f"{len(model)} models ({', '.join(model)})"
                )
            async with in_process_worker(db):
                final, _ = await wait_for_run(db, org_id, run_id, timeout=None, show=not as_json)
                analysed = final.run.status is RunStatus.COMPLETED and await wait_for_analysis(
                    db, run_id, timeout=ANALYSIS_WAIT_SECONDS
                )
            async with db.transaction() as conn:
                results = await model_results(conn, org_id, run_id)
            sensitivity = await demo_sensitivity(db, org_id, run_id) if analysed else {}
            if not as_json:
                console.print(results_table(results, robustness=sensitivity.get("robustness")))
                if final.run.summary:
                    console.print(final.run.summary)
                if sensitivity:
                    console.print(sensitivity_table(sensitivity))
                    for line in sensitivity_lines(sensitivity):
                        console.print(f"  {line}", soft_wrap=True)
            if serve_after and not as_json:
                from valuerank.cli.serve_cmd import binds_loopback_only, serve

                # Zero set-up: on this machine only, the browser is signed in as the local
                # admin (auto-login is refused on any other interface).
                local = binds_loopback_only(host)
                settings = opened.settings.model_copy(update={"auto_login": local})

                def ready(url: str) -> None:
                    console.print(
                        f"\nopen [bold]{url}{landing_path(run_id, analysed)}[/] to explore the "
                        "run (Ctrl+C to stop)",
                        soft_wrap=True,
                    )
                    if not local:
                        console.print(
                            "[dim]sign in with an API token: `valuerank users create` and "
                            "`valuerank tokens create` (see `valuerank serve`)[/]",
                            soft_wrap=True,
                        )

                await serve(
                    db, org_id, host=host, port=port, work=True, on_ready=ready, settings=settings
                )
            return {
                **report_json(final, results),
                "analysed": analysed,
                "valueSensitivity": sensitivity.get("valueSensitivity"),
                "robustness": sensitivity.get("robustness"),
            }

    data = run(_go(), as_json=as_json)
    if as_json:
        print_json(data)


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
