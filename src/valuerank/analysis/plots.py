"""Plots of analysis results (matplotlib, Agg, PNG and SVG), drawn from the result JSON.

Each figure function takes the stored JSON (so cached analyses plot without recomputing)
and returns a `matplotlib.figure.Figure` built without pyplot (no global state, no GUI
backend); `save` writes it as PNG and SVG. The figures: PCA scatter of the models, win rates
with their intervals, the agreement heat map, dimension effects, and the forest plot of a
comparison's deltas.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import numpy as np
from matplotlib.figure import Figure

FORMATS = ("png", "svg")
DPI = 110


def _empty(title: str, message: str) -> Figure:
    fig = Figure(figsize=(6, 2.5))
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.set_title(title)
    ax.text(0.5, 0.5, message, ha="center", va="center", wrap=True)
    return fig


def pca_scatter(deep: Mapping[str, Any]) -> Figure:
    """The models on the first two principal components (one axis when there is one)."""
    pca = deep["pca"]
    if not pca.get("available"):
        return _empty("PCA of models", pca.get("reason", "not available"))
    coords = pca["coordinates"]
    ratios = pca["explainedVarianceRatio"]
    names = list(coords)
    xs = [coords[m][0] for m in names]
    ys = [coords[m][1] if len(coords[m]) > 1 else 0.0 for m in names]
    fig = Figure(figsize=(6.5, 5))
    ax = fig.add_subplot()
    ax.scatter(xs, ys, s=40, color="#3465a4")
    for name, x, y in zip(names, xs, ys, strict=True):
        ax.annotate(name, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
    ax.axhline(0, color="#bbbbbb", linewidth=0.8)
    ax.axvline(0, color="#bbbbbb", linewidth=0.8)
    ax.set_xlabel(f"PC1 ({ratios[0]:.0%} of variance)")
    ax.set_ylabel(f"PC2 ({ratios[1]:.0%} of variance)" if len(ratios) > 1 else "(one component)")
    ax.set_title("Models over scenarios (standardised PCA)")
    fig.tight_layout()
    return fig


def win_rates(basic: Mapping[str, Any]) -> Figure:
    """Each model's win rate per value with its interval (0.5 = as often won as lost)."""
    per_model = basic["perModel"]
    values = sorted({v for stats in per_model.values() for v in stats["values"]})
    if not values:
        return _empty("Value win rates", "no judged transcripts: win rates need judges")
    models = list(per_model)
    fig = Figure(figsize=(7, 1.2 + 0.45 * len(values) * max(1, len(models)) ** 0.5))
    ax = fig.add_subplot()
    step = 0.8 / max(len(models), 1)
    for k, model in enumerate(models):
        ys, xs, lo, hi = [], [], [], []
        for j, value in enumerate(values):
            entry = per_model[model]["values"].get(value)
            if entry is None:
                continue
            ci = entry["confidenceInterval"]
            ys.append(j - 0.4 + step * (k + 0.5))
            xs.append(entry["winRate"])
            lo.append(entry["winRate"] - ci["lower"])
            hi.append(ci["upper"] - entry["winRate"])
        ax.errorbar(xs, ys, xerr=[lo, hi], fmt="o", capsize=2, markersize=4, label=model)
    ax.axvline(0.5, color="#888888", linestyle="--", linewidth=0.8)
    ax.set_yticks(range(len(values)), values)
    ax.set_xlim(0, 1)
    ax.set_xlabel("win rate = prioritised / (prioritised + deprioritised), 95 % interval")
    ax.set_title("Value win rates per model")
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    return fig


def value_sensitivity(basic: Mapping[str, Any]) -> Figure:
    """Each stake's effect on each model's decision (points per level) with its 95 %
    interval, models side by side; positive = towards the top of the scale."""
    section = basic.get("valueSensitivity") or {}
    models = list(section)
    dims = sorted({d for dims in section.values() for d in dims})
    if not dims:
        return _empty("Value sensitivity", "no dimensions: nothing to measure")
    fig = Figure(figsize=(7, 1.4 + 0.5 * len(dims) * max(1, len(models)) ** 0.5))
    ax = fig.add_subplot()
    step = 0.8 / max(len(models), 1)
    for k, model in enumerate(models):
        ys, xs, lo, hi = [], [], [], []
        for j, dim in enumerate(dims):
            entry = section[model].get(dim) or {}
            if entry.get("coefficient") is None:
                continue
            ci = entry.get("ci95") or [entry["coefficient"]] * 2
            ys.append(j - 0.4 + step * (k + 0.5))
            xs.append(entry["coefficient"])
            lo.append(entry["coefficient"] - ci[0])
            hi.append(ci[1] - entry["coefficient"])
        ax.errorbar(xs, ys, xerr=[lo, hi], fmt="o", capsize=2, markersize=4, label=model)
    first = next(iter(section.values()))
    ax.set_yticks(range(len(dims)), [f"{first[d]['value']} ({d})" for d in dims], fontsize=8)
    ax.invert_yaxis()
    ax.axvline(0, color="#888888", linestyle="--", linewidth=0.8)
    labels = basic.get("scaleLabels") or {}
    top = labels[max(labels, key=int)] if labels else "higher codes"
    ax.set_xlabel(f"decision points per level, 95 % interval (+: towards {top!r})", wrap=True)
    ax.set_title("Value sensitivity: what moves each model")
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    return fig


def agreement_matrix(basic: Mapping[str, Any]) -> tuple[list[str], Any]:
    """(models, matrix of Spearman ρ with 1 on the diagonal and NaN where undefined)."""
    models = list(basic["perModel"])
    index = {m: i for i, m in enumerate(models)}
    matrix = np.full((len(models), len(models)), np.nan)
    np.fill_diagonal(matrix, 1.0)
    for entry in basic["modelAgreement"]["pairwise"].values():
        rho = entry["spearmanRho"]
        if rho is not None:
            i, j = index[entry["model1"]], index[entry["model2"]]
            matrix[i, j] = matrix[j, i] = rho
    return models, matrix


def agreement_heatmap(basic: Mapping[str, Any]) -> Figure:
    models, matrix = agreement_matrix(basic)
    if len(models) < 2:
        return _empty("Model agreement", "one model: nothing to compare")
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
    analysis = basic["dimensionAnalysis"]
    dims = list(analysis["dimensions"])
    if not dims:
        return _empty("Dimension effects", "no dimensions")
    groups = {"all models": analysis["dimensions"]}
    groups.update({m: e["dimensions"] for m, e in analysis.get("byModel", {}).items()})
    fig = Figure(figsize=(7, 1.5 + 0.5 * len(dims) * max(1, len(groups)) ** 0.5))
    ax = fig.add_subplot()
    step = 0.8 / len(groups)
    for k, (label, effects) in enumerate(groups.items()):
        heights = [(effects.get(d) or {}).get("effectSize") or 0.0 for d in dims]
        ys = [j - 0.4 + step * (k + 0.5) for j in range(len(dims))]
        ax.barh(ys, heights, height=step * 0.9, label=label)
    ax.set_yticks(range(len(dims)), dims)
    ax.set_xlabel("η² (share of decision variance explained by the dimension)")
    ax.set_title("Dimension effects")
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    return fig


def comparison_forest(comparison: Mapping[str, Any]) -> Figure:
    """Decision delta per shared model with its bootstrap interval, significant in colour."""
    rows = [(m, e) for m, e in comparison["perModel"].items() if e["delta"] is not None]
    if not rows:
        return _empty("Comparison", "no model decided a shared scenario in both runs")
    fig = Figure(figsize=(7, 1.5 + 0.45 * len(rows)))
    ax = fig.add_subplot()
    for y, (_, entry) in enumerate(rows):
        interval = entry["interval"]
        colour = "#cc0000" if entry["wilcoxon"].get("significant") else "#3465a4"
        ax.errorbar(
            [entry["delta"]],
            [y],
            xerr=[[entry["delta"] - interval["lower"]], [interval["upper"] - entry["delta"]]],
            fmt="s",
            color=colour,
            capsize=3,
        )
    ax.axvline(0, color="#888888", linestyle="--", linewidth=0.8)
    ax.set_yticks(range(len(rows)), [m for m, _ in rows], fontsize=8)
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
