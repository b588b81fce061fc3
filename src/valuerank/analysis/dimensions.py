"""Which scenario dimensions move the decisions: Kruskal–Wallis, η², R², correlations.

The scenario is the unit: a dimension's level is a property of the scenario, and a model's
samples of one scenario (and the models' answers to it) share it, so counting transcripts as
independent overstates the evidence. Each test therefore runs on scenario means: per
model (`byModel`) on the model's mean decision per scenario; pooled on each scenario's mean of
the models' means (every model weighs alike). For each dimension, the scenarios are grouped by
its level: the Kruskal–Wallis H test says whether the groups differ (p-value, Holm-corrected
across the dimensions), η² = SS_between / SS_total says how much of the scenario means'
variance the grouping explains. `varianceExplained` is the R² of one least-squares fit of the
scenario means with every dimension as a categorical factor (the original summed the η², which
double counts when dimensions are correlated and is not an R²). Over a few scenario means both
are biased up — pure noise gets R² = p/(n − 1) in expectation, 0.32 for 6 parameters over 20
means — so each comes with its adjusted value (`varianceExplainedAdjusted`, the adjusted R²;
`epsilonSquared`, Kelley's ε² = the adjusted R² of the one-way grouping) and that chance level
(`varianceExplainedByChance`, `etaSquaredByChance`). A scenario that lacks a
dimension is left out of that dimension's test only, and counted in `missing` — never dropped
silently. `n` counts scenarios, `transcripts` the decided transcripts behind them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from valuerank.analysis.correlation import pearson_with_interval, spearman_with_interval
from valuerank.analysis.data import AnalysisInput, FloatArray, IntArray
from valuerank.analysis.intervals import adjust
from valuerank.analysis.warning import AnalysisWarning


def eta_squared(groups: IntArray, y: FloatArray) -> float | None:
    """SS_between / SS_total of y grouped by the codes `groups`; None when SS_total = 0."""
    total = float(((y - y.mean()) ** 2).sum())
    if total == 0:
        return None
    counts = np.bincount(groups)
    sums = np.bincount(groups, weights=y)
    present = counts > 0
    between = float((sums[present] ** 2 / counts[present]).sum() - y.sum() ** 2 / y.size)
    return max(0.0, min(1.0, between / total))


def adjusted(r2: float | None, n: int, parameters: int) -> float | None:
    """Adjusted R², 1 − (1 − R²)(n − 1)/(n − p − 1) for p parameters beside the intercept
    (statsmodels' `rsquared_adj`; it may be negative). Of a one-way grouping's η² it is
    Kelley's ε². None when undefined (n ≤ p + 1)."""
    if r2 is None or n - parameters - 1 <= 0:
        return None
    return 1 - (1 - r2) * (n - 1) / (n - parameters - 1)


def chance_r2(n: int, parameters: int) -> float | None:
    """E[R²] of p parameters fitted to pure noise over n rows, p/(n − 1): what an unadjusted
    R² or η² reaches by chance alone (6 parameters over 20 scenario means: 0.32)."""
    return None if n <= 1 else min(1.0, parameters / (n - 1))


def kruskal(groups: IntArray, y: FloatArray) -> float | None:
    """Kruskal–Wallis p-value (tie-corrected); None with fewer than two groups or no
    variation. Means are rounded to 10 decimals first: equal means (10/3 from two sums) are
    ties, not ranks apart by a rounding error."""
    labels = np.unique(groups)
    y = np.round(y, 10)
    if labels.size < 2 or np.all(y == y[0]):
        return None
    return float(stats.kruskal(*(y[groups == g] for g in labels)).pvalue)


def r_squared(levels: FloatArray, y: FloatArray) -> tuple[float | None, int]:
    """(R², parameters beside the intercept) of y on every column of `levels` as a
    categorical factor (treatment coding); R² None when y has no variance or no rows.

    With categorical predictors only, the least-squares fit depends on the data through the
    cells (distinct level combinations) alone: the residual sum of squares is the spread
    within cells plus the count-weighted misfit of the cell means. So the fit is solved on
    the cells (at most the product of the level counts) instead of on every row."""
    if y.size == 0:
        return None, 0
    total = float(((y - y.mean()) ** 2).sum())
    if total == 0:
        return None, 0
    combos, cell = np.unique(levels, axis=0, return_inverse=True)
    cell = cell.reshape(-1)
    counts = np.bincount(cell).astype(float)
    means = np.bincount(cell, weights=y) / counts
    within = float(((y - means[cell]) ** 2).sum())
    columns = [np.ones(len(combos))]
    for col in combos.T:
        codes = np.unique(col, return_inverse=True)[1].reshape(-1)
        columns.append(np.eye(int(codes.max()) + 1)[codes][:, 1:])
    design = np.column_stack(columns)
    root = np.sqrt(counts)
    coef, *_ = np.linalg.lstsq(design * root[:, None], means * root, rcond=None)
    between = float((counts * (means - design @ coef) ** 2).sum())
    parameters = int(np.linalg.matrix_rank(design)) - 1
    return max(0.0, min(1.0, 1 - (within + between) / total)), parameters


@dataclass(frozen=True)
class _Levels:
    """Each scenario's level of each dimension: the values and 0-based codes (-1 where the
    scenario lacks the dimension), computed once for every subset."""

    values: FloatArray  # (scenarios, dimensions)
    codes: IntArray  # (scenarios, dimensions)

    @classmethod
    def of(cls, data: AnalysisInput) -> _Levels:
        values = data.levels
        codes = np.full(values.shape, -1, dtype=np.intp)
        for j in range(values.shape[1]):
            present = ~np.isnan(values[:, j])
            codes[present, j] = np.unique(values[present, j], return_inverse=True)[1].reshape(-1)
        return cls(values, codes)


def _effects(
    dimensions: tuple[str, ...], levels: _Levels, y: FloatArray, weight: FloatArray, alpha: float
) -> tuple[dict[str, Any], dict[str, float | None]]:
    """The dimensions section over the scenario means `y` (NaN: no decision); `weight` is
    each scenario's number of decided transcripts, reported, not used."""
    rows = ~np.isnan(y)
    found: list[dict[str, Any]] = []
    for j, dim in enumerate(dimensions):
        codes = levels.codes[:, j]
        has = rows & (codes >= 0)
        ys = y[has]
        groups = codes[has]
        eta2 = eta_squared(groups, ys) if ys.size else None
        k = int(np.count_nonzero(np.bincount(groups))) if ys.size else 0
        found.append(
            {
                "name": dim,
                "effectSize": eta2,
                "epsilonSquared": adjusted(eta2, int(ys.size), k - 1),
                "etaSquaredByChance": chance_r2(int(ys.size), k - 1) if k else None,
                "pValue": kruskal(groups, ys) if ys.size else None,
                "n": int(ys.size),
                "transcripts": int(weight[has].sum()),
                "missing": int((rows & (codes < 0)).sum()),
                "levels": k,
            }
        )
    corrected, significant = adjust([f["pValue"] for f in found], "holm", alpha)
    ranked = sorted(
        range(len(found)),
        key=lambda k: (found[k]["effectSize"] is None, -(found[k]["effectSize"] or 0.0), k),
    )
    dims: dict[str, Any] = {}
    for rank, k in enumerate(ranked, start=1):
        entry = dict(found[k])
        name = entry.pop("name")
        dims[name] = {
            **entry,
            "rank": rank,
            "pValueCorrected": corrected[k],
            "significant": significant[k],
        }
    complete = rows & (levels.codes >= 0).all(axis=1)
    r2, parameters = r_squared(levels.values[complete], y[complete]) if dimensions else (None, 0)
    n = int(complete.sum())
    explained = {
        "varianceExplained": r2,
        "varianceExplainedAdjusted": adjusted(r2, n, parameters),
        "varianceExplainedByChance": None if r2 is None else chance_r2(n, parameters),
    }
    return dims, explained


def scenario_means(data: AnalysisInput) -> tuple[FloatArray, FloatArray]:
    """(pooled, cells): each scenario's mean of the models' mean decisions (scenarios,) and
    the model × scenario means (models, scenarios); NaN where nothing was decided."""
    cells = data.cell_means()
    present = ~np.isnan(cells)
    models = present.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        pooled = np.where(models > 0, np.where(present, cells, 0.0).sum(axis=0) / models, np.nan)
    return pooled, cells


def _decided_per_cell(data: AnalysisInput) -> FloatArray:
    m, s = data.shape
    decided = data.decided
    flat = data.model_idx[decided] * s + data.scenario_idx[decided]
    return np.bincount(flat, minlength=m * s).astype(float).reshape(m, s)


def dimension_analysis(
    data: AnalysisInput, alpha: float = 0.05
) -> tuple[dict[str, Any], list[AnalysisWarning]]:
    """The `dimensionAnalysis` section and its warnings."""
    warnings: list[AnalysisWarning] = []
    if not data.dimensions:
        warnings.append(
            AnalysisWarning(
                "NO_DIMENSIONS",
                "No scenario dimensions found in transcripts",
                "Variable impact analysis will be empty",
            )
        )
    levels = _Levels.of(data)
    pooled_y, cells = scenario_means(data)
    counts = _decided_per_cell(data)
    pooled, explained = _effects(data.dimensions, levels, pooled_y, counts.sum(axis=0), alpha)
    by_model = {}
    for i, model in enumerate(data.models):
        dims, model_explained = _effects(data.dimensions, levels, cells[i], counts[i], alpha)
        by_model[model] = {"dimensions": dims, **model_explained}
    missing = {d: e["missing"] for d, e in pooled.items() if e["missing"]}
    if missing:
        listed = ", ".join(f"{d} ({n})" for d, n in sorted(missing.items()))
        warnings.append(
            AnalysisWarning(
                "DIMENSION_MISSING",
                f"Some scenarios with decisions lack dimensions (scenarios): {listed}",
                "Each dimension is tested on the scenarios that have it; varianceExplained "
                "uses only scenarios with every dimension",
            )
        )
    return {
        "dimensions": pooled,
        **explained,
        "method": "kruskal_wallis",
        "unit": "scenario",
        "byModel": by_model,
    }, warnings


def correlations(data: AnalysisInput) -> dict[str, Any]:
    """Per model and dimension: Pearson and Spearman correlation of the dimension's level
    with the model's mean decision per scenario (n = scenarios), with Fisher-z 95 % intervals
    (scipy's for Pearson, Bonett–Wright's for Spearman).

    No finite-population correction: a correlation over noisy scenario means is attenuated
    by the samples' noise, which running every scenario does not remove, so an interval
    narrowed towards the full run's r would not cover the models' correlation."""
    _, cells = scenario_means(data)
    result: dict[str, Any] = {}
    for i, model in enumerate(data.models):
        mine = ~np.isnan(cells[i])
        result[model] = {}
        for j, dim in enumerate(data.dimensions):
            rows = mine & ~np.isnan(data.levels[:, j])
            x, y = data.levels[rows, j], cells[i, rows]
            r = pearson_with_interval(x, y)
            rho = spearman_with_interval(x, y)
            result[model][dim] = {
                "n": int(rows.sum()),
                "pearson": {"r": r.value, "pValue": r.p_value, "interval": r.interval},
                "spearman": {"rho": rho.value, "pValue": rho.p_value, "interval": rho.interval},
            }
    return result
