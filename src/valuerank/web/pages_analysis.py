"""Analysis and comparison pages: a run's analysis (value sensitivities first, win rates
with intervals, PCA, agreement heat map, dimension effects, outliers, contested scenarios),
comparing two runs (deltas with intervals and significance as a forest plot, the most
divergent scenarios), experiments and the lineage results of a definition.

The figures are the analysis package's own (analysis/plots.py) rendered as inline SVG, once
per analysis and kept beside it (report/figures.analysis_figures); the data comes from the
services the API and CLI call. Queuing work (a deep analysis, a background comparison) happens
in the page's JavaScript through the API."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response
from markupsafe import Markup
from pydantic import Field

from valuerank.analysis.sensitivity_words import sentence
from valuerank.api.deps import Viewer
from valuerank.definitions.service import list_definitions
from valuerank.findings.analyses import run_analysis
from valuerank.findings.comparisons import Comparison, compare_runs, get_comparison
from valuerank.findings.lineage import lineage_results
from valuerank.pipeline.experiments import experiment_report, list_experiments
from valuerank.report.figures import analysis_figures
from valuerank.report.svg import forest_svg
from valuerank.runs.listing import find_runs
from valuerank.runs.service import Run, get_run
from valuerank.web.templating import templates

router = APIRouter(include_in_schema=False)

RefQuery = Annotated[str | None, Query(max_length=100)]


def _markup(svgs: dict[str, str]) -> dict[str, Markup]:
    # matplotlib escapes the texts it writes (report/svg.figure_svg): safe to embed.
    return {name: Markup(svg) for name, svg in svgs.items()}


@router.get("/runs/{run_id}/analysis", response_class=HTMLResponse)
async def analysis_page(request: Request, run_id: str, ctx: Viewer) -> Response:
    outcome = await run_analysis(ctx.db, ctx.org_id, run_id)
    deep = outcome.current_deep
    async with ctx.db.transaction() as conn:
        run = await get_run(conn, ctx.org_id, outcome.run_id)
    basic = outcome.analysis
    svgs = await analysis_figures(
        ctx.db, ctx.org_id, outcome.run_id, outcome.input_hash, basic, deep
    )
    return templates.TemplateResponse(
        request,
        "analysis.html",
        {
            "run": run,
            "basic": basic,
            "deep": deep,
            "figures": _markup(svgs),
            "cached": outcome.cached,
            "sensitivity": sensitivity_rows(basic),
        },
    )


def sensitivity_rows(basic: dict[str, Any]) -> list[dict[str, Any]]:
    """The value sensitivities as table rows with their sentence; `clear` when the interval
    excludes no effect (those are listed in words under the table)."""
    labels = basic.get("scaleLabels")
    rows = []
    for model, dims in (basic.get("valueSensitivity") or {}).items():
        for dim, entry in dims.items():
            ci = entry.get("ci95")
            rows.append(
                {
                    "model": model,
                    "dimension": dim,
                    "entry": entry,
                    "text": sentence(model, entry, labels),
                    "clear": bool(ci) and (ci[0] > 0 or ci[1] < 0),
                }
            )
    return rows


RUN_CHOICES = 200  # runs offered by the compare page's pickers


async def _run_choices(ctx: Viewer) -> list[Run]:
    """The newest runs for the pickers: their rows only (a progress report per run was 200
    reads more and made this the slowest page of a big organisation)."""
    async with ctx.db.transaction() as conn:
        return (await find_runs(conn, ctx.org_id, limit=RUN_CHOICES))[:RUN_CHOICES]


@router.get("/compare", response_class=HTMLResponse)
async def compare_page(
    request: Request,
    ctx: Viewer,
    baseline: RefQuery = None,
    comparison: RefQuery = None,
) -> Response:
    """Pick two runs; with both chosen, compare them now (reusing a completed comparison of
    the same inputs, as `valuerank compare` does)."""
    found: Comparison | None = None
    if baseline and comparison:
        found = (await compare_runs(ctx.db, ctx.org_id, baseline, comparison)).comparison
    async with ctx.db.transaction() as conn:
        experiments = await list_experiments(conn, ctx.org_id, limit=50)
    return await _comparison_response(
        request,
        ctx,
        found,
        {"experiments": experiments, "baseline": baseline, "comparison": comparison},
    )


@router.get("/compare/comparisons/{comparison_id}", response_class=HTMLResponse)
async def comparison_page(request: Request, comparison_id: str, ctx: Viewer) -> Response:
    """A stored comparison (queued in the background: the page reloads until it is done)."""
    async with ctx.db.transaction() as conn:
        found = await get_comparison(conn, ctx.org_id, comparison_id)
    return await _comparison_response(
        request,
        ctx,
        found,
        {
            "experiments": None,
            "baseline": found.baseline_run_id,
            "comparison": found.comparison_run_id,
        },
    )


async def _comparison_response(
    request: Request, ctx: Viewer, found: Comparison | None, extra: dict[str, Any]
) -> Response:
    forest = None
    if found is not None and found.result is not None:
        forest = Markup(await asyncio.to_thread(forest_svg, found.result))
    return templates.TemplateResponse(
        request,
        "compare.html",
        {"runs": await _run_choices(ctx), "found": found, "forest": forest, **extra},
    )


@router.get("/compare/experiments/{experiment_id}", response_class=HTMLResponse)
async def experiment_page(request: Request, experiment_id: str, ctx: Viewer) -> Response:
    report = await experiment_report(ctx.db, ctx.org_id, experiment_id)
    async with ctx.db.transaction() as conn:  # the versions a variant may run instead
        definitions = await list_definitions(conn, ctx.org_id)
    return templates.TemplateResponse(
        request, "compare_experiment.html", {"report": report, "definitions": definitions}
    )


# The lineage page lists this many aligned scenarios (the API answers them all).
ALIGNED_SHOWN = 200
RefList = Annotated[list[Annotated[str, Field(max_length=100)]] | None, Query(max_length=100)]


@router.get("/compare/lineage/{definition_id}", response_class=HTMLResponse)
async def lineage_page(
    request: Request,
    definition_id: str,
    ctx: Viewer,
    run: RefList = None,
    exclude: RefList = None,
) -> Response:
    """The whole tree of the version; `run` and `exclude` as the API takes them (the form's
    empty choice, "latest completed", sends an empty `run`)."""
    results = await lineage_results(
        ctx.db,
        ctx.org_id,
        definition_id,
        run_refs=[r for r in run or () if r],
        exclude=[e for e in exclude or () if e],
    )
    return templates.TemplateResponse(
        request, "compare_lineage.html", {"lineage": results, "aligned_cap": ALIGNED_SHOWN}
    )
