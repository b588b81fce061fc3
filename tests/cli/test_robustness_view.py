"""The robustness tables `valuerank analyze` and `valuerank demo` print show the figures of
the analysis JSON: the order effect with its interval, consistency, ranks with intervals."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from valuerank.analysis.basic import analyze_basic
from valuerank.analysis.synthetic import RecoverySpec, recovery_run
from valuerank.analysis.synthetic_presentation import PresentationSpec, presentation_run
from valuerank.cli.live import results_table
from valuerank.cli.robustness_view import ranks_table, robustness_table
from valuerank.runs.results import ModelResult


def shown(table: Table | None) -> str:
    assert table is not None
    console = Console(record=True, width=220)
    console.print(table)
    return console.export_text()


def both_orders() -> dict[str, Any]:
    spec = PresentationSpec(scenarios=30, samples=2, position_bias=0.5, seed=3)
    return analyze_basic(presentation_run(spec))


def test_the_robustness_table_shows_the_order_effect_and_consistency() -> None:
    analysis = both_orders()
    entry = analysis["robustness"]["model-0"]
    text = shown(robustness_table(analysis))
    order = entry["orderEffect"]
    low, high = order["ci95"]
    assert f"{order['value']:+.2f} [{low:.2f}, {high:.2f}]" in text
    agreed = entry["consistency"]
    assert f"{agreed['value']:.0%}" in text and f"of {agreed['scenarios']}" in text
    assert "only one phrasing was asked" in text  # why there is no phrasing effect


def test_the_ranks_table_shows_each_value_with_its_interval() -> None:
    analysis = both_orders()
    ranked = analysis["robustness"]["model-0"]["ranking"]["sensitivity"]
    text = shown(ranks_table(analysis))
    for value in ranked["values"]:
        low, high = value["ci95"]
        interval = f"[{low}–{high}]" if low != high else f"[{low}]"
        assert f"{value['rank']} {interval}" in text and value["value"] in text


def test_the_demo_table_adds_order_effect_and_ranks_only_when_the_analysis_has_them() -> None:
    analysis = both_orders()
    result = ModelResult("model-0", 120, 120, 0, 3.0, 1.0, {3: 120}, None, True)
    text = shown(results_table([result], robustness=analysis["robustness"]))
    order = analysis["robustness"]["model-0"]["orderEffect"]
    assert "order effect" in text and f"{order['value']:+.2f}" in text
    assert "value ranks" in text
    one_way = analyze_basic(recovery_run(RecoverySpec(scenarios=12)))
    text = shown(results_table([result], robustness=one_way["robustness"]))
    assert "order effect" not in text  # asked one way: no column to fill
    assert "order effect" not in shown(results_table([result]))
