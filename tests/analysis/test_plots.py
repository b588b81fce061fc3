"""Plots draw what the results say (read back from the matplotlib artists), and write PNG
and SVG."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import numpy as np
import pytest
from matplotlib.container import ErrorbarContainer

from valuerank.analysis.basic import analyze_basic
from valuerank.analysis.comparison import compare
from valuerank.analysis.deep import analyze_deep
from valuerank.analysis.plots import (
    agreement_heatmap,
    agreement_matrix,
    analysis_figures,
    comparison_forest,
    dimension_effects,
    pca_scatter,
    value_sensitivity,
    win_rates,
    write_figures,
)
from valuerank.analysis.synthetic import SyntheticSpec, synthetic_run

from .helpers import run_of

Results = tuple[dict[str, Any], dict[str, Any], dict[str, Any]]  # basic, deep, comparison


@pytest.fixture(scope="module")
def results() -> Results:
    data = synthetic_run(SyntheticSpec(models=4, scenarios=40, seed=9))
    other = synthetic_run(SyntheticSpec(models=4, scenarios=40, seed=10))
    basic = analyze_basic(data)
    return basic, analyze_deep(data, basic=basic, bootstrap=10), compare(data, other, bootstrap=50)


def test_pca_scatter_places_every_model_at_its_coordinates(results: Results) -> None:
    _, deep, _ = results
    fig = pca_scatter(deep)
    points = np.asarray(fig.axes[0].collections[0].get_offsets())
    coords = deep["pca"]["coordinates"]
    np.testing.assert_allclose(points, [[c[0], c[1]] for c in coords.values()])
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert labels == list(coords)


def test_heatmap_and_win_rates_show_the_figures(results: Results) -> None:
    basic, _, _ = results
    models, matrix = agreement_matrix(basic)
    for entry in basic["modelAgreement"]["pairwise"].values():
        i, j = models.index(entry["model1"]), models.index(entry["model2"])
        assert matrix[i, j] == matrix[j, i] == entry["spearmanRho"]
    fig = agreement_heatmap(basic)
    shown = {t.get_text() for t in fig.axes[0].texts}
    assert f"{matrix[0, 1]:.2f}" in shown
    rates = win_rates(basic)
    legend = rates.axes[0].get_legend()
    assert legend is not None and len(legend.get_texts()) == len(basic["perModel"])


def test_forest_plot_one_row_per_shared_model(results: Results) -> None:
    _, _, comparison = results
    fig = comparison_forest(comparison)
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert ticks == list(comparison["perModel"])


def test_files_are_png_and_svg(results: Results, tmp_path: Path) -> None:
    basic, deep, comparison = results
    figures = {**analysis_figures(basic, deep), "comparison_forest": comparison_forest(comparison)}
    paths = write_figures(figures, tmp_path / "plots")
    assert len(paths) == 2 * len(figures) == 12
    for path in paths:
        if path.suffix == ".png":
            assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        else:
            assert ElementTree.parse(path).getroot().tag.endswith("svg")


def test_nothing_to_draw_is_said_in_the_figure() -> None:
    basic = analyze_basic(run_of([("m:a", "s1", 3)]))
    fig = win_rates(basic)
    assert "win rates need judges" in fig.axes[0].texts[0].get_text()


def test_dimension_effects_draw_every_eta_squared(results: Results) -> None:
    basic, _, _ = results
    analysis = basic["dimensionAnalysis"]
    dims = list(analysis["dimensions"])
    fig = dimension_effects(basic)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == dims
    groups = {"all models": analysis["dimensions"]}
    groups.update({m: e["dimensions"] for m, e in analysis["byModel"].items()})
    legend = ax.get_legend()
    assert legend is not None
    assert [t.get_text() for t in legend.get_texts()] == list(groups)
    for container, (label, effects) in zip(ax.containers, groups.items(), strict=True):
        assert container.get_label() == label
        widths = [bar.get_width() for bar in container]
        assert widths == pytest.approx([effects[d]["effectSize"] or 0.0 for d in dims])
        centres = [bar.get_y() + bar.get_height() / 2 for bar in container]
        assert np.round(centres).tolist() == list(range(len(dims)))  # each bar at its dimension


def test_win_rate_error_bars_are_the_stored_intervals(results: Results) -> None:
    basic, _, _ = results
    per_model = basic["perModel"]
    values = sorted({v for stats in per_model.values() for v in stats["values"]})
    ax = win_rates(basic).axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == values
    containers = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert [c.get_label() for c in containers] == list(per_model)
    for container, stats in zip(containers, per_model.values(), strict=True):
        points, _, (bars,) = container.lines
        segments = bars.get_segments()
        assert len(segments) == len(values)
        for j, value in enumerate(values):
            entry = stats["values"][value]
            ci = entry["confidenceInterval"]
            (x0, y0), (x1, y1) = segments[j]
            assert (x0, x1) == pytest.approx((ci["lower"], ci["upper"]))
            assert y0 == y1 and round(y0) == j  # on the value's row
            assert np.asarray(points.get_xdata())[j] == pytest.approx(entry["winRate"])


def test_without_a_deep_analysis_there_is_no_pca_figure(results: Results) -> None:
    basic, deep, _ = results
    assert "pca_scatter" not in analysis_figures(basic)
    assert "pca_scatter" in analysis_figures(basic, deep)


def test_value_sensitivity_error_bars_are_the_stored_intervals(results: Results) -> None:
    basic, _, _ = results
    section = basic["valueSensitivity"]
    dims = sorted({d for entries in section.values() for d in entries})
    ax = value_sensitivity(basic).axes[0]
    first = next(iter(section.values()))
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        f"{first[d]['value']} ({d})" for d in dims
    ]
    containers = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert [c.get_label() for c in containers] == list(section)
    for container, entries in zip(containers, section.values(), strict=True):
        points, _, (bars,) = container.lines
        for j, dim in enumerate(dims):
            entry = entries[dim]
            (x0, _), (x1, _) = bars.get_segments()[j]
            assert (x0, x1) == pytest.approx(tuple(entry["ci95"]))
            assert np.asarray(points.get_xdata())[j] == pytest.approx(entry["coefficient"])
    assert (
        "nothing to measure"
        in value_sensitivity(analyze_basic(run_of([("m:a", "s1", 3)]))).axes[0].texts[0].get_text()
    )
