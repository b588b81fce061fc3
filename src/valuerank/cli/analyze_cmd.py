"""`valuerank analyze`, `valuerank compare`, `valuerank experiments …`, `valuerank lineage …`.

The commands compute through the same services as the API and the jobs (valuerank.findings,
valuerank.pipeline.experiments): cached results are served while the runs' inputs match. Each
command imports what it needs when it runs: a cached `analyze` reads a stored row and loads
neither the statistics (scipy, statsmodels, matplotlib) nor the launch of runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from valuerank.cli.analysis_view import print_analysis, print_comparison
from valuerank.cli.common import JsonOption, console, database, print_json, run, session
from valuerank.errors import InvalidInputError
from valuerank.refs import short_id

PlotsOption = typer.Option(
    None, "--plots", help="Also write the plots (PNG and SVG) into this directory."
)


if TYPE_CHECKING:
    from valuerank.findings.analyses import AnalysisOutcome


def _plots(figures: dict[str, Any], directory: Path | None) -> list[str]:
    from valuerank.analysis import plots

    if directory is None:
        return []
    return [str(p) for p in plots.write_figures(figures, directory)]


PCA_NEEDS_DEEP = (
    "pca_scatter not written: the PCA is part of the deep analysis and this run has no "
    "current one; add --deep"
)


async def _analyze(
    run_id: str,
    *,
    deep: bool,
    force: bool,
    narrative_model: str | None,
    allow_unknown_model: bool,
) -> tuple[AnalysisOutcome, dict[str, Any] | None]:
    """The analysis, and the narrative asked for: queued (`job_id`) unless the deep analysis
    has one already. The model is checked before anything is computed."""
    from valuerank.findings.analyses import run_analysis

    async with database() as opened:
        if narrative_model is not None:
            # The narrative's checks load the registry and the model calls: only when asked.
            from valuerank.pipeline.analyze import check_narrative_model, narrate

            async with opened.db.transaction(immediate=True) as conn:  # seeds the registry
                await check_narrative_model(
                    conn, opened.org_id, narrative_model, allow_unknown=allow_unknown_model
                )
        outcome = await run_analysis(opened.db, opened.org_id, run_id, deep=deep, force=force)
        if narrative_model is None:
            return outcome, None
        async with opened.db.transaction(immediate=True) as conn:
            queued = await narrate(conn, opened.org_id, outcome, narrative_model)
    if queued is None:
        return outcome, {"model": narrative_model, "status": "exists", "job_id": None}
    status = "queued" if queued.enqueued else "already queued"
    return outcome, {"model": narrative_model, "status": status, "job_id": queued.job_id}


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
    """Findings of a run: value profiles, agreement, dimension effects (cached by input)."""
    wants_deep = deep or narrative_model is not None

    async def _go() -> dict[str, Any]:
        outcome, narrative = await _analyze(
            run_id,
            deep=wants_deep,
            force=force,
            narrative_model=narrative_model,
            allow_unknown_model=allow_unknown_model,
        )
        data = outcome.to_dict()
        if narrative is not None:
            data["narrative"] = narrative
        data["current_deep"] = outcome.current_deep
        return data

    data = run(_go(), as_json=as_json)
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
    """Compare two runs paired on scenario identity: deltas, intervals, tests, divergences."""
    from valuerank.analysis import plots
    from valuerank.findings.comparisons import compare_runs
    from valuerank.shapes import dump

    async def _go() -> dict[str, Any]:
        async with database() as opened:
            outcome = await compare_runs(
                opened.db, opened.org_id, baseline, other, correction=correction, force=force
            )
        return {
            "success": True,
            "cached": outcome.cached,
            "comparison": dump(outcome.comparison),
        }

    data = run(_go(), as_json=as_json)
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
    """Create an experiment around a baseline run."""
    from valuerank.pipeline.experiments import create_experiment
    from valuerank.shapes import dump

    async def _go() -> dict[str, Any]:
        async with session() as s:
            made = await create_experiment(
                s.conn, s.org_id, name=name, hypothesis=hypothesis, baseline_run=baseline
            )
        return dump(made)  # type: ignore[no-any-return]

    data = run(_go(), as_json=as_json)
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
    """Create (and start) a variant run: the baseline's settings with the stated changes."""
    from valuerank.pipeline.experiments import add_variant

    async def _go() -> dict[str, Any]:
        stated = _changes(model, definition, temperature, sample_percentage, sample_seed, changes)
        async with session() as s:
            variant = await add_variant(s.conn, s.org_id, experiment, stated, start=not no_start)
        return {
            **variant.run.summary_dict(),
            "experiment_id": variant.experiment_id,
            "changes": variant.changes,
        }

    data = run(_go(), as_json=as_json)
    if as_json:
        print_json(data)
    else:
        console.print(f"variant run [bold]{data['id']}[/] ({data['status']}): {data['changes']}")


@experiments_app.command("report")
def experiments_report(
    experiment: str = typer.Argument(..., help="Experiment id or prefix."),
    as_json: bool = JsonOption,
) -> None:
    """Every variant compared with the baseline (once both have finished)."""
    from valuerank.pipeline.experiments import experiment_report

    async def _go() -> dict[str, Any]:
        async with database() as opened:
            return await experiment_report(opened.db, opened.org_id, experiment)

    data = run(_go(), as_json=as_json)
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
    """The organisation's experiments, newest first."""
    from valuerank.pipeline.experiments import list_experiments
    from valuerank.shapes import dump

    async def _go() -> list[dict[str, Any]]:
        async with session() as s:
            return dump(await list_experiments(s.conn, s.org_id, limit=500))  # type: ignore[no-any-return]

    rows = run(_go(), as_json=as_json)
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
    chosen run has, each delta next to the diff behind it."""
    from valuerank.findings.lineage import lineage_results

    async def _go() -> dict[str, Any]:
        async with database() as opened:
            return await lineage_results(
                opened.db, opened.org_id, definition, run_refs=chosen, exclude=exclude
            )

    data = run(_go(), as_json=as_json)
    if as_json:
        print_json(data)
        return
    console.print(f"[bold]{data['name']}[/]: {len(data['versions'])} versions")
    for version in data["versions"]:
        means = ", ".join(
            f"{m} {r['mean']:.2f}" if r["mean"] is not None else f"{m} –"
            for m, r in (version.get("results") or {}).items()
        )
        indent = "  " * version["depth"]
        basis = f" ({version['basis']})" if version.get("basis") else ""
        represented = (
            f"run {short_id(version['representative_run_id'])} "
            f"({'chosen' if version['chosen_by'] == 'explicit' else 'latest completed'}): "
            f"{means or 'no results'}{basis}"
            if version["representative_run_id"]
            else version["no_run_reason"]
        )
        console.print(
            f"{indent}{version['label']}: {len(version['runs'])} runs; {represented}",
            highlight=False,
            markup=False,
        )
    models = data["models"]
    if models["compared"]:
        console.print(f"compared: {', '.join(models['compared'])}", highlight=False)
    for dropped in models["dropped"]:
        console.print(f"left out: {dropped['model']}: {dropped['reason']}", highlight=False)
    for change in data["changes"]:
        console.print(f"[bold]{change['from_label']} → {change['to_label']}[/]")
        for line in change["diff_lines"]:
            console.print(f"  {line}", highlight=False, markup=False)
        for model, entry in change["comparison"]["perModel"].items():
            console.print(f"  {model}: Δ {entry['delta'] if entry['delta'] is not None else '–'}")
    for table, reason in data["empty"].items():
        if reason is not None and (table != "aligned" or reason != data["empty"]["changes"]):
            console.print(f"no {table}: {reason}", highlight=False, markup=False)


def register(app: typer.Typer) -> None:
    app.command("analyze")(analyze)
    app.command("compare")(compare)
    app.add_typer(experiments_app, name="experiments")
    app.add_typer(lineage_app, name="lineage")
