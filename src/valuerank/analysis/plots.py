"""Plots of analysis results (matplotlib, Agg, PNG and SVG), drawn from the result JSON.

Each figure function takes the stored JSON (so cached analyses plot without recomputing)
and returns a `matplotlib.figure.Figure` built without pyplot (no global state, no GUI
backend); `save` writes it as PNG and SVG. The figures: PCA scatter of the models, win rates
with their intervals, the agreement heat map, dimension effects, and the forest plot of a
comparison's deltas.

Every figure draws whatever shape of result it is given and never raises on it: missing
sections or keys, no models, one model, win rates of exactly 0 and 1 (whose stored interval
end can sit a rounding error on the wrong side of the point), and interval ends that are
null or NaN (an unbounded side: drawn as a dotted arrow to the edge of the axes). With
nothing to draw the figure says so in words.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

FORMATS = ("png", "svg")
DPI = 110
OPEN_END_GID = "open-interval"  # the arrows drawn for an unbounded interval side


def empty_figure(title: str, message: str) -> Figure:
    """A figure that says in words why there is nothing to draw."""
    fig = Figure(figsize=(6, 2.5))
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.set_title(title)
    ax.text(0.5, 0.5, message, ha="center", va="center", wrap=True)
    return fig


def _map(value: Any) -> Mapping[str, Any]:
    """`value` when it is a mapping, else an empty one (a missing or null section)."""
    return value if isinstance(value, Mapping) else {}


def _number(value: Any) -> float | None:
    """A finite float, or None for null, NaN, infinity and anything not a number."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _ends(interval: Any) -> tuple[Any, Any]:
    """(lower, upper) of an interval stored as {"lower", "upper"} or as [lower, upper]."""
    if isinstance(interval, Mapping):
        return interval.get("lower"), interval.get("upper")
    if isinstance(interval, Sequence) and not isinstance(interval, str) and len(interval) == 2:
        return interval[0], interval[1]
    return None, None


class _Bars:
    """Points with horizontal error bars, one series: the errors are the distances from the
    point to its interval's ends, never negative (an end on the wrong side by a rounding
    error is the point itself); a missing end draws no bar on that side but an arrow."""

    def __init__(self) -> None:
        self.xs: list[float] = []
        self.ys: list[float] = []
        self.below: list[float] = []
        self.above: list[float] = []
        self.open: list[tuple[float, float, int]] = []  # (x, y, direction) of unbounded sides

    def add(self, x: float, y: float, interval: Any) -> None:
        lower, upper = (_number(end) for end in _ends(interval))
        self.xs.append(x)
        self.ys.append(y)
        self.below.append(0.0 if lower is None else max(0.0, x - lower))
        self.above.append(0.0 if upper is None else max(0.0, upper - x))
        if interval is not None:  # no interval at all is a point estimate, not unbounded
            self.open += [(x, y, -1)] if lower is None else []
            self.open += [(x, y, 1)] if upper is None else []

    def draw(self, ax: Axes, **style: Any) -> None:
        container = ax.errorbar(self.xs, self.ys, xerr=[self.below, self.above], **style)
        colour = container.lines[0].get_color() if container.lines[0] is not None else None
        for x, y, direction in self.open:
            ax.annotate(
                "",
                xy=(0.0 if direction < 0 else 1.0, y),
                xycoords=ax.get_yaxis_transform(),  # x: the axes' edge; y: the point's row
                xytext=(x, y),
                textcoords="data",
                arrowprops={"arrowstyle": "->", "linestyle": ":", "color": colour},
                gid=OPEN_END_GID,
            )


def _offset(j: int, k: int, step: float) -> float:
    """The y of series k in row j (series side by side within a row)."""
    return j - 0.4 + step * (k + 0.5)


def _legend(ax: Axes) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="best")


def pca_scatter(deep: Mapping[str, Any]) -> Figure:
    """The models on the first two principal components (one axis when there is one)."""
    pca = _map(_map(deep).get("pca"))
    if not pca.get("available"):
        return empty_figure("PCA of models", str(pca.get("reason") or "not available"))
    points = []
    for name, coords in _map(pca.get("coordinates")).items():
        if isinstance(coords, Sequence) and coords and _number(coords[0]) is not None:
            y = _number(coords[1]) if len(coords) > 1 else None
            points.append((str(name), _number(coords[0]) or 0.0, y or 0.0))
    if not points:
        return empty_figure("PCA of models", "no model has coordinates")
    ratios = [_number(r) for r in pca.get("explainedVarianceRatio") or []]
    fig = Figure(figsize=(6.5, 5))
    ax = fig.add_subplot()
    ax.scatter([p[1] for p in points], [p[2] for p in points], s=40, color="#3465a4")
    for name, x, y in points:
        ax.annotate(name, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
    ax.axhline(0, color="#bbbbbb", linewidth=0.8)
    ax.axvline(0, color="#bbbbbb", linewidth=0.8)

    def share(i: int) -> str:
        ratio = ratios[i] if i < len(ratios) else None
        return "" if ratio is None else f" ({ratio:.0%} of variance)"

    ax.set_xlabel(f"PC1{share(0)}")
    ax.set_ylabel(f"PC2{share(1)}" if len(ratios) > 1 else "(one component)")
    ax.set_title("Models over scenarios (standardised PCA)")
    fig.tight_layout()
    return fig


def win_rates(basic: Mapping[str, Any]) -> Figure:
    """Each model's win rate per value with its interval (0.5 = as often won as lost)."""
    per_model = {
        str(m): _map(_map(s).get("values")) for m, s in _map(basic.get("perModel")).items()
    }
    values = sorted({str(v) for stats in per_model.values() for v in stats})
    if not values:
        return empty_figure("Value win rates", "no judged transcripts: win rates need judges")
    models = list(per_model)
    fig = Figure(figsize=(7, 1.2 + 0.45 * len(values) * max(1, len(models)) ** 0.5))
    ax = fig.add_subplot()
    step = 0.8 / max(len(models), 1)
    for k, model in enumerate(models):
        bars = _Bars()
        for j, value in enumerate(values):
            entry = _map(per_model[model].get(value))
            rate = _number(entry.get("winRate"))
            if rate is not None:
                bars.add(rate, _offset(j, k, step), entry.get("confidenceInterval"))
        bars.draw(ax, fmt="o", capsize=2, markersize=4, label=model)
    ax.axvline(0.5, color="#888888", linestyle="--", linewidth=0.8)
    ax.set_yticks(range(len(values)), values)
    ax.set_ylim(-0.6, len(values) - 0.4)
    ax.set_xlim(-0.03, 1.03)  # points at exactly 0 and 1 drawn whole
    ax.set_xlabel("win rate = prioritised / (prioritised + deprioritised), 95 % interval")
    ax.set_title("Value win rates per model")
    _legend(ax)
    fig.tight_layout()
    return fig


def value_sensitivity(basic: Mapping[str, Any]) -> Figure:
    """Each stake's effect on each model's decision (points per score unit) with its 95 %
    interval, models side by side; positive = towards the top of the scale."""
    section = {str(m): _map(d) for m, d in _map(basic.get("valueSensitivity")).items()}
    models = list(section)
    dims = sorted({str(d) for dims in section.values() for d in dims})
    if not dims:
        return empty_figure("Value sensitivity", "no dimensions: nothing to measure")
    fig = Figure(figsize=(7, 1.4 + 0.5 * len(dims) * max(1, len(models)) ** 0.5))
    ax = fig.add_subplot()
    step = 0.8 / max(len(models), 1)
    for k, model in enumerate(models):
        bars = _Bars()
        for j, dim in enumerate(dims):
            entry = _map(section[model].get(dim))
            coefficient = _number(entry.get("coefficient"))
            if coefficient is not None:
                bars.add(coefficient, _offset(j, k, step), entry.get("ci95"))
        bars.draw(ax, fmt="o", capsize=2, markersize=4, label=model)

    def label(dim: str) -> str:
        # The value a dimension stands for, from whichever model measured it.
        named = (_map(entries.get(dim)).get("value") for entries in section.values())
        value = next((v for v in named if v), None)
        return f"{value} ({dim})" if value else dim

    ax.set_yticks(range(len(dims)), [label(d) for d in dims], fontsize=8)
    ax.set_ylim(-0.6, len(dims) - 0.4)
    ax.invert_yaxis()
    ax.axvline(0, color="#888888", linestyle="--", linewidth=0.8)
    labels = {k: v for k, v in _map(basic.get("scaleLabels")).items() if str(k).isdigit()}
    top = labels[max(labels, key=int)] if labels else "higher codes"
    ax.set_xlabel(f"decision points per score unit, 95 % interval (+: towards {top!r})", wrap=True)
    ax.set_title("Value sensitivity: what moves each model")
    _legend(ax)
    fig.tight_layout()
    return fig


def agreement_matrix(basic: Mapping[str, Any]) -> tuple[list[str], Any]:
    """(models, matrix of Spearman ρ with 1 on the diagonal and NaN where undefined)."""
    models = [str(m) for m in _map(basic.get("perModel"))]
    index = {m: i for i, m in enumerate(models)}
    matrix = np.full((len(models), len(models)), np.nan)
    np.fill_diagonal(matrix, 1.0)
    for entry in _map(_map(basic.get("modelAgreement")).get("pairwise")).values():
        entry = _map(entry)
        rho = _number(entry.get("spearmanRho"))
        i, j = index.get(str(entry.get("model1"))), index.get(str(entry.get("model2")))
        if rho is not None and i is not None and j is not None:
            matrix[i, j] = matrix[j, i] = rho
    return models, matrix


def agreement_heatmap(basic: Mapping[str, Any]) -> Figure:
    models, matrix = agreement_matrix(basic)
    if len(models) < 2:
        return empty_figure("Model agreement", "one model: nothing to compare")
    size = 2.5 + 0.55 * len(models)
    fig = Figure(figsize=(size + 1.5, size))
    ax = fig.add_subplot()
    image = ax.imshow(np.ma.masked_invalid(matrix), cmap="RdBu", vmin=-1, vmax=1)
    ax.set_xticks(range(len(models)), models, rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(len(models)), models, fontsize=8)
    for i in range(len(models)):
        for j in range(len(models)):
            if not np.isnan(matrix[i, j]):
                colour = "white" if abs(matrix[i, j]) > 0.6 else "black"  # legible on dark cells
                ax.text(
                    j, i, f"{matrix[i, j]:.2f}", ha="center", va="center", fontsize=7, color=colour
                )
    fig.colorbar(image, ax=ax, label="Spearman ρ")
    ax.set_title("Model agreement")
    fig.tight_layout()
    return fig


def dimension_effects(basic: Mapping[str, Any]) -> Figure:
    """η² of each dimension, pooled and per model."""
    analysis = _map(basic.get("dimensionAnalysis"))
    pooled = _map(analysis.get("dimensions"))
    dims = [str(d) for d in pooled]
    if not dims:
        return empty_figure("Dimension effects", "no dimensions")
    groups: dict[str, Mapping[str, Any]] = {"all models": pooled}
    groups.update(
        {str(m): _map(_map(e).get("dimensions")) for m, e in _map(analysis.get("byModel")).items()}
    )
    fig = Figure(figsize=(7, 1.5 + 0.5 * len(dims) * max(1, len(groups)) ** 0.5))
    ax = fig.add_subplot()
    step = 0.8 / len(groups)
    for k, (label, effects) in enumerate(groups.items()):
        heights = [_number(_map(effects.get(d)).get("effectSize")) or 0.0 for d in dims]
        ys = [_offset(j, k, step) for j in range(len(dims))]
        ax.barh(ys, heights, height=step * 0.9, label=label)
    ax.set_yticks(range(len(dims)), dims)
    ax.set_xlabel("η² (share of decision variance explained by the dimension)")
    ax.set_title("Dimension effects")
    _legend(ax)
    fig.tight_layout()
    return fig


def comparison_forest(comparison: Mapping[str, Any]) -> Figure:
    """Decision delta per shared model with its bootstrap interval, significant in colour."""
    rows = [
        (str(m), _map(e))
        for m, e in _map(comparison.get("perModel")).items()
        if _number(_map(e).get("delta")) is not None
    ]
    if not rows:
        return empty_figure("Comparison", "no model decided a shared scenario in both runs")
    fig = Figure(figsize=(7, 1.5 + 0.45 * len(rows)))
    ax = fig.add_subplot()
    for y, (_, entry) in enumerate(rows):
        bars = _Bars()
        bars.add(_number(entry["delta"]) or 0.0, y, entry.get("interval"))
        significant = _map(entry.get("wilcoxon")).get("significant")
        bars.draw(ax, fmt="s", color="#cc0000" if significant else "#3465a4", capsize=3)
    ax.axvline(0, color="#888888", linestyle="--", linewidth=0.8)
    ax.set_yticks(range(len(rows)), [m for m, _ in rows], fontsize=8)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.invert_yaxis()
    ax.set_xlabel("mean decision delta (comparison − baseline), 95 % paired bootstrap interval")
    ax.set_title("Comparison: decision deltas (red: significant after correction)")
    fig.tight_layout()
    return fig


def save(fig: Figure, directory: Path, name: str) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in FORMATS:
        path = directory / f"{name}.{fmt}"
        fig.savefig(path, format=fmt, dpi=DPI)
        paths.append(path)
    return paths


def analysis_figures(
    basic: Mapping[str, Any], deep: Mapping[str, Any] | None = None
) -> dict[str, Figure]:
    figures = {
        "value_sensitivity": value_sensitivity(basic),
        "win_rates": win_rates(basic),
        "agreement_heatmap": agreement_heatmap(basic),
        "dimension_effects": dimension_effects(basic),
    }
    if deep is not None:
        figures["pca_scatter"] = pca_scatter(deep)
    return figures


def write_figures(figures: Mapping[str, Figure], directory: Path) -> list[Path]:
    return [path for name, fig in figures.items() for path in save(fig, directory, name)]
