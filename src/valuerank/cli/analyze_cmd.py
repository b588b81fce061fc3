"""`valuerank analyze`, `valuerank compare`, `valuerank experiments …`, `valuerank lineage …`.

The commands compute through the same services as the API and the jobs (valuerank.findings,
valuerank.pipeline.experiments): cached results are served while the runs' inputs match. Each
command imports what it needs when it runs: a cached `analyze` reads a stored row and loads
neither the statistics (scipy, statsmodels, matplotlib) nor the launch of runs. With
VALUERANK_API_URL set, each asks the server (valuerank.client.analysis) for the same JSON and
prints it with the same code; only `--plots` draws here (matplotlib, on the user's machine).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from valuerank.cli.analysis_view import print_analysis, print_comparison
from valuerank.cli.common import (
    JsonOption,
    console,
    database,
    fail,
    local_or_server,
    print_json,
    session,
)
from valuerank.cli.lineage_view import print_lineage
from valuerank.client import analysis as remote
from valuerank.errors import InvalidInputError
from valuerank.refs import short_id

PlotsOption = typer.Option(
    None, "--plots", help="Also write the plots (PNG and SVG) into this directory."
)


def _plots(figures: dict[str, Any], directory: Path | None) -> list[str]:
    from valuerank.analysis import plots

    if directory is None:
        return []
    return [str(p) for p in plots.write_figures(figures, directory)]


PCA_NEEDS_DEEP = (
    "pca_scatter not written: the PCA is part of the deep analysis and this run has no "
    "current one; add --deep"
)


def analyze(
    run_id: str = typer.Argument(..., help="Run id or prefix."),
    deep: bool = typer.Option(
        False, "--deep", help="Also PCA, outliers, correlations, κ/α, Bradley–Terry, insights."
    ),
    force: bool = typer.Option(False, "--force", help="Recompute even if the cache is current."),
    narrative_model: str | None = typer.Option(
        None,
        "--narrative-model",
        help="A model that writes the deep analysis' narrative (implies --deep; queued as a "
        "summarize:analysis job for a worker unless the analysis has one). Checked like a run's "
        "models.",
    ),
    allow_unknown_model: bool = typer.Option(
        False,
        "--allow-unknown-model",
        help="Allow a narrative model the registry does not know (it must name a known provider).",
    ),
    plots_dir: Path | None = PlotsOption,
    as_json: bool = JsonOption,
) -> None:
    """Findings of a run: value profiles, agreement, dimension effects (cached by input).

    With VALUERANK_API_URL set the server computes them."""

    async def _go() -> dict[str, Any]:
        from valuerank.pipeline.analyze_now import analyze_now

        async with database() as opened:
            data = await analyze_now(
                opened.db,
                opened.org_id,
                run_id,
                deep=deep,
                force=force,
                narrative_model=narrative_model,
                allow_unknown_model=allow_unknown_model,
            )
        return {"success": True, **data}

    data = local_or_server(
        _go,
        lambda server: remote.analyze(
            server,
            run_id,
            deep=deep,
            force=force,
            narrative_model=narrative_model,
            allow_unknown_model=allow_unknown_model,
            current_deep=plots_dir is not None,
        ),
        as_json=as_json,
    )
    analysis = data["analysis"]
    current_deep = data.pop("current_deep")
    notes: list[str] = []
    written: list[str] = []
    if plots_dir is not None:
        from valuerank.analysis import plots  # matplotlib: only when drawing

        written = _plots(plots.analysis_figures(analysis, current_deep), plots_dir)
        if current_deep is None:
            notes.append(PCA_NEEDS_DEEP)
    if as_json:
        extra = {"plots": written, "notes": notes} if plots_dir else {}
        print_json({**data, **extra})
        return
    print_analysis(console, analysis)
    narrative = data.get("narrative")
    if narrative is not None:
        console.print(narrative_line(narrative))
    for path in written:
        console.print(f"plot: {path}")
    for note in notes:
        console.print(f"[yellow]{note}[/]")


def narrative_line(narrative: dict[str, Any]) -> str:
    if narrative["status"] == "exists":
        return f"narrative: the deep analysis has one already (not asking {narrative['model']})"
    return (
        f"narrative by {narrative['model']}: {narrative['status']} (job {narrative['job_id']}); "
        "a worker writes it (`valuerank worker`), then `valuerank analyze RUN --deep` shows it"
    )


def compare(
    baseline: str = typer.Argument(..., help="Baseline run id or prefix."),
    other: str = typer.Argument(..., help="The run compared with it."),
    correction: str = typer.Option(
        "fdr_bh", "--correction", help="fdr_bh (Benjamini–Hochberg) or holm, across all tests."
    ),
    force: bool = typer.Option(False, "--force", help="Recompute even if a result is current."),
    plots_dir: Path | None = PlotsOption,
    as_json: bool = JsonOption,
) -> None:
    """Compare two runs paired on scenario identity: deltas, intervals, tests, divergences.

    With VALUERANK_API_URL set the server compares them."""

    async def _go() -> dict[str, Any]:
        from valuerank.findings.comparisons import compare_runs
        from valuerank.shapes import dump

        async with database() as opened:
            outcome = await compare_runs(
                opened.db, opened.org_id, baseline, other, correction=correction, force=force
            )
        return {
            "success": True,
            "cached": outcome.cached,
            "comparison": dump(outcome.comparison),
        }

    data = local_or_server(
        _go,
        lambda server: remote.compare(server, baseline, other, correction=correction, force=force),
        as_json=as_json,
    )
    written: list[str] = []
    if plots_dir is not None:
        from valuerank.analysis import plots  # matplotlib: only when drawing

        result = data["comparison"]["result"]
        written = _plots({"comparison_forest": plots.comparison_forest(result)}, plots_dir)
    if as_json:
        print_json({**data, "plots": written} if plots_dir else data)
        return
    print_comparison(console, data["comparison"])
    for path in written:
        console.print(f"plot: {path}")


experiments_app = typer.Typer(
    help="Experiments: a hypothesis, a baseline run and variants that change one thing.",
    no_args_is_help=True,
)


@experiments_app.command("create")
def experiments_create(
    name: str = typer.Option(..., "--name", help="What the experiment is called."),
    baseline: str = typer.Option(..., "--baseline", help="The baseline run (id or prefix)."),
    hypothesis: str = typer.Option("", "--hypothesis", help="What you expect to see."),
    as_json: bool = JsonOption,
) -> None:
    """Create an experiment around a baseline run.

    With VALUERANK_API_URL set the server stores it."""

    async def _go() -> dict[str, Any]:
        from valuerank.pipeline.experiments import create_experiment
        from valuerank.shapes import dump

        async with session() as s:
            made = await create_experiment(
                s.conn, s.org_id, name=name, hypothesis=hypothesis, baseline_run=baseline
            )
        return dump(made)  # type: ignore[no-any-return]

    data = local_or_server(
        _go,
        lambda server: remote.create_experiment(
            server, name=name, hypothesis=hypothesis, baseline=baseline
        ),
        as_json=as_json,
    )
    if as_json:
        print_json(data)
    else:
        console.print(f"experiment [bold]{data['id']}[/] {data['name']}")


def _changes(
    models: list[str],
    definition: str | None,
    temperature: float | None,
    sample_percentage: float | None,
    sample_seed: int | None,
    raw: str | None,
) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    if raw:
        try:
            loaded = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"--changes is not JSON: {exc}") from None
        if not isinstance(loaded, dict):
            raise InvalidInputError("--changes must be a JSON object")
        changes.update(loaded)
    if models:
        changes["models"] = list(models)
    if definition is not None:
        changes["definition_id"] = definition
    for key, value in (
        ("temperature", temperature),
        ("sample_percentage", sample_percentage),
        ("sample_seed", sample_seed),
    ):
        if value is not None:
            changes[key] = value
    return changes


@experiments_app.command("add-variant")
def experiments_add_variant(
    experiment: str = typer.Argument(..., help="Experiment id or prefix."),
    model: list[str] = typer.Option([], "--model", "-m", help="The variant's models (repeat)."),
    definition: str | None = typer.Option(None, "--definition", help="Another definition version."),
    temperature: float | None = typer.Option(None, "--temperature"),
    sample_percentage: float | None = typer.Option(None, "--sample-percentage"),
    sample_seed: int | None = typer.Option(None, "--sample-seed"),
    changes: str | None = typer.Option(
        None, "--changes", help="Any change as JSON, e.g. '{\"max_tokens\": 500}'."
    ),
    no_start: bool = typer.Option(False, "--no-start", help="Create the run without starting it."),
    as_json: bool = JsonOption,
) -> None:
    """Create (and start) a variant run: the baseline's settings with the stated changes.

    With VALUERANK_API_URL set the server creates it."""
    try:
        stated = _changes(model, definition, temperature, sample_percentage, sample_seed, changes)
    except InvalidInputError as exc:
        fail(exc.message, code=exc.code, as_json=as_json, hint=exc.hint)

    async def _go() -> dict[str, Any]:
        from valuerank.pipeline.experiments import add_variant
        from valuerank.queue.dialect import iso

        async with session() as s:
            variant = await add_variant(s.conn, s.org_id, experiment, stated, start=not no_start)
        return {  # the shape of POST /api/experiments/{id}/runs
            **variant.run.summary_dict(),
            "experiment_id": variant.experiment_id,
            "changes": variant.changes,
            "created_at": iso(variant.created_at),
        }

    data = local_or_server(
        _go,
        lambda server: remote.add_variant(server, experiment, stated, start=not no_start),
        as_json=as_json,
    )
    if as_json:
        print_json(data)
    else:
        console.print(f"variant run [bold]{data['id']}[/] ({data['status']}): {data['changes']}")


@experiments_app.command("report")
def experiments_report(
    experiment: str = typer.Argument(..., help="Experiment id or prefix."),
    as_json: bool = JsonOption,
) -> None:
    """Every variant compared with the baseline (once both have finished).

    With VALUERANK_API_URL set the server compares them."""

    async def _go() -> dict[str, Any]:
        from valuerank.pipeline.experiments import experiment_report

        async with database() as opened:
            return await experiment_report(opened.db, opened.org_id, experiment)

    data = local_or_server(
        _go, lambda server: remote.experiment_report(server, experiment), as_json=as_json
    )
    if as_json:
        print_json(data)
        return
    console.print(f"[bold]{data['name']}[/]: {data['hypothesis']}")
    console.print(f"baseline {short_id(data['baseline']['id'])} ({data['baseline']['status']})")
    for variant in data["variants"]:
        console.print(
            f"variant {short_id(variant['run_id'])} {variant['changes']}: {variant['status']}"
        )
        if variant["comparison"] is not None:
            print_comparison(console, variant["comparison"])
        else:
            console.print(f"  waiting for {', '.join(short_id(r) for r in variant['waiting_for'])}")


@experiments_app.command("list")
def experiments_list(as_json: bool = JsonOption) -> None:
    """The organisation's experiments, newest first.

    With VALUERANK_API_URL set the server lists them."""

    async def _go() -> list[dict[str, Any]]:
        from valuerank.pipeline.experiments import list_experiments
        from valuerank.shapes import dump

        async with session() as s:
            found = await list_experiments(s.conn, s.org_id, limit=remote.EXPERIMENTS_LIMIT)
            return dump(found)  # type: ignore[no-any-return]

    rows = local_or_server(_go, remote.list_experiments, as_json=as_json)
    if as_json:
        print_json(rows)
        return
    for row in rows:
        console.print(
            f"{short_id(row['id'])}  {row['name']}  baseline {short_id(row['baseline_run_id'])}"
        )


lineage_app = typer.Typer(help="Results across a definition's fork tree.", no_args_is_help=True)


@lineage_app.command("results")
def lineage_results_cmd(
    definition: str = typer.Argument(..., help="Definition version id or prefix."),
    chosen: list[str] = typer.Option(
        [],
        "--run",
        help="A run to represent its version (repeat; one per version, any status). "
        "Other versions get their latest completed run.",
    ),
    exclude: list[str] = typer.Option(
        [], "--exclude", help="A version of the tree to leave out (repeat)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """The whole fork tree: one run per version, aligned on scenarios on the models every
    chosen run has, each delta next to the diff behind it.

    With VALUERANK_API_URL set the server answers."""

    async def _go() -> dict[str, Any]:
        from valuerank.findings.lineage import lineage_results

        async with database() as opened:
            return await lineage_results(
                opened.db, opened.org_id, definition, run_refs=chosen, exclude=exclude
            )

    data = local_or_server(
        _go,
        lambda server: remote.lineage_results(server, definition, runs=chosen, exclude=exclude),
        as_json=as_json,
    )
    if as_json:
        print_json(data)
        return
    print_lineage(console, data)


def register(app: typer.Typer) -> None:
    app.command("analyze")(analyze)
    app.command("compare")(compare)
    app.add_typer(experiments_app, name="experiments")
    app.add_typer(lineage_app, name="lineage")
