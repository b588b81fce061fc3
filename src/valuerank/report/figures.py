"""A run's figures as inline SVG, drawn once per analysis: the analysis page and the report
take them from this process's cache, else from the database (drawn by an earlier process and
kept beside the analysis: `analysis_figures`), else draw them (matplotlib, in a thread) and
keep them in both. A cached report in a new process therefore imports no matplotlib.
`report_figures` draws without either cache (the tests' and the benchmark's)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from valuerank.db.engine import Database
from valuerank.findings.figure_rows import store_figures, stored_figures
from valuerank.report.svg import (
    analysis_svgs,
    basic_svgs,
    deep_svgs,
    figure_key,
    figures_version,
    forest_svg,
    svg_cache,
)


def report_figures(
    basic: Mapping[str, Any],
    deep: Mapping[str, Any] | None = None,
    comparison: Mapping[str, Any] | None = None,
) -> dict[str, str]:
    """The analysis' figures by name, and `comparison_forest` when a comparison is given,
    all drawn now (blocking)."""
    figures = analysis_svgs(basic, deep)
    if comparison is not None:
        figures["comparison_forest"] = forest_svg(comparison)
    return figures


async def analysis_figures(
    db: Database,
    org_id: str,
    run_id: str,
    input_hash: str,
    basic: Mapping[str, Any],
    deep: Mapping[str, Any] | None,
) -> dict[str, str]:
    """The figures of the run's current analysis (`input_hash`: the hash `run_analysis`
    read), drawn at most once per analysis and drawing code."""
    key = figure_key(org_id, run_id, input_hash, deep is not None)
    found = svg_cache.get(key)
    if found is not None:
        return found
    version = figures_version()
    async with db.snapshot() as conn:
        stored = await stored_figures(conn, org_id, run_id, input_hash, version)
    parts: dict[str, tuple[Mapping[str, Any], Callable[[Mapping[str, Any]], dict[str, str]]]]
    parts = {"basic": (basic, basic_svgs)}
    if deep is not None:
        parts["deep"] = (deep, deep_svgs)
    svgs: dict[str, str] = {}
    for kind, (data, draw) in parts.items():
        drawn = stored.get(kind)
        if drawn is None:
            drawn = await asyncio.to_thread(draw, data)
            await store_figures(db, org_id, run_id, kind, input_hash, version, drawn)
        svgs.update(drawn)
    svg_cache.put(key, svgs)
    return svgs


def comparison_figure(result: Mapping[str, Any], comparison_id: str) -> str:
    """The forest plot of a stored comparison (blocking on a miss): its result never changes,
    so its id keys it in this process's cache."""
    key = ("report-forest", comparison_id)
    found = svg_cache.get(key)
    if found is None:
        found = {"forest": forest_svg(result)}
        svg_cache.put(key, found)
    return found["forest"]
