"""The report's matplotlib figures as inline SVG, drawn once per report (blocking: run it in
a thread). The same figures as the analysis page (report/svg.py), from the same in-process
cache when a key is given: a server that drew a run's analysis page serves its report's
figures without drawing them again."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

from valuerank.report.svg import analysis_svgs, cached_analysis_svgs, forest_svg, svg_cache


def report_figures(
    basic: Mapping[str, Any],
    deep: Mapping[str, Any] | None = None,
    comparison: Mapping[str, Any] | None = None,
    *,
    key: Hashable | None = None,
    comparison_id: str | None = None,
) -> dict[str, str]:
    """The analysis' figures by name, and `comparison_forest` when a comparison is given.
    `key` (as the analysis page builds it) must change whenever `basic` or `deep` does; a
    stored comparison's result never changes, so its id keys its forest plot."""
    if key is None:
        figures = dict(analysis_svgs(basic, deep))
    else:
        figures = dict(cached_analysis_svgs(key, basic, deep)[0])
    if comparison is not None:
        figures["comparison_forest"] = _forest(comparison, comparison_id)
    return figures


def _forest(result: Mapping[str, Any], comparison_id: str | None) -> str:
    if comparison_id is None:
        return forest_svg(result)
    key = ("report-forest", comparison_id)
    found = svg_cache.get(key)
    if found is None:
        found = {"forest": forest_svg(result)}
        svg_cache.put(key, found)
    return found["forest"]
