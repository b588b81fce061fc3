"""Which scenario dimensions move the decisions: Kruskal–Wallis, η², R², correlations.

For each dimension, the decided transcripts are grouped by the dimension's level: the
Kruskal–Wallis H test says whether the groups differ (p-value, Holm-corrected across the
dimensions), η² = SS_between / SS_total says how much of the decisions' variance the
grouping explains. `varianceExplained` is the R² of one least-squares fit with every
dimension as a categorical factor (the original summed the η², which double counts when
dimensions are correlated and is not an R²). A transcript whose scenario lacks a dimension
is left out of that dimension's test only, and counted in `missing` — never dropped silently.
The pooled analysis (all models) keeps the original's keys; `byModel` repeats it per model,
since models that weigh a dimension in opposite directions cancel out when pooled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from valuerank.analysis.correlation import pearson_with_interval, spearman_with_interval
from valuerank.analysis.data import AnalysisInput, BoolArray, FloatArray, IntArray
from valuerank.analysis.intervals import adjust
from valuerank.analysis.output import AnalysisWarning


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


def kruskal(groups: IntArray, y: FloatArray) -> float | None:
    """Kruskal–Wallis p-value (tie-corrected); None with fewer than two groups or no
    variation."""
    labels = np.unique(groups)
    if labels.size < 2 or np.all(y == y[0]):
        return None
    return float(stats.kruskal(*(y[groups == g] for g in labels)).pvalue)


def r_squared(levels: FloatArray, y: FloatArray) -> float | None:
    """R² of y on every column of `levels` as a categorical factor (treatment coding);
    None when y has no variance or there are no rows.

    With categorical predictors only, the least-squares fit depends on the data through the
    cells (distinct level combinations) alone: the residual sum of squares is the spread
    within cells plus the count-weighted misfit of the cell means. So the fit is solved on
    the cells (at most the product of the level counts) instead of on every transcript."""
    if y.size == 0:
        return None
    total = float(((y - y.mean()) ** 2).sum())
    if total == 0:
        return None
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
    return max(0.0, min(1.0, 1 - (within + between) / total))


@dataclass(frozen=True)
class _Levels:
    """Each decided transcript's level of each dimension: the values and 0-based codes
    (-1 where its scenario lacks the dimension), computed once for every subset."""

    values: FloatArray  # (transcripts, dimensions)
    codes: IntArray  # (transcripts, dimensions)

    @classmethod
    def of(cls, data: AnalysisInput) -> _Levels:
        values = data.levels[data.scenario_idx]
        codes = np.full(values.shape, -1, dtype=np.intp)
        for j in range(values.shape[1]):
            present = ~np.isnan(values[:, j])
            codes[present, j] = np.unique(values[present, j], return_inverse=True)[1].reshape(-1)
        return cls(values, codes)


def _effects(
    data: AnalysisInput, levels: _Levels, rows: BoolArray, alpha: float
) -> tuple[dict[str, Any], float | None]:
    """The dimensions section over the transcripts selected by `rows` (decided ones)."""
    y_all = data.decision
    found: list[dict[str, Any]] = []
    for j, dim in enumerate(data.dimensions):
        codes = levels.codes[:, j]
        has = rows & (codes >= 0)
        y = y_all[has]
        groups = codes[has]
        eta = eta_squared(groups, y) if y.size else None
        p = kruskal(groups, y) if y.size else None
        found.append(
            {
                "name": dim,
                "effectSize": eta,
                "pValue": p,
                "n": int(y.size),
                "missing": int((rows & (codes < 0)).sum()),
                "levels": int(np.count_nonzero(np.bincount(groups))) if y.size else 0,
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
    r2 = r_squared(levels.values[complete], y_all[complete]) if data.dimensions else None
    return dims, r2


def dimension_analysis(
    data: AnalysisInput, alpha: float = 0.05
) -> tuple[dict[str, Any], list[AnalysisWarning]]:
    """The `dimensionAnalysis` section and its warnings."""
    warnings: list[AnalysisWarning] = []
    decided = data.decided
    if not data.dimensions:
        warnings.append(
            AnalysisWarning(
                "NO_DIMENSIONS",
                "No scenario dimensions found in transcripts",
                "Variable impact analysis will be empty",
            )
        )
    levels = _Levels.of(data)
    pooled, r2 = _effects(data, levels, decided, alpha)
    by_model = {}
    for i, model in enumerate(data.models):
        dims, model_r2 = _effects(data, levels, decided & (data.model_idx == i), alpha)
        by_model[model] = {"dimensions": dims, "varianceExplained": model_r2}
    missing = {d: e["missing"] for d, e in pooled.items() if e["missing"]}
    if missing:
        listed = ", ".join(f"{d} ({n})" for d, n in sorted(missing.items()))
        warnings.append(
            AnalysisWarning(
                "DIMENSION_MISSING",
                f"Some decided transcripts' scenarios lack dimensions: {listed}",
                "Each dimension is tested on the transcripts that have it; varianceExplained "
                "uses only transcripts with every dimension",
            )
        )
    return {
        "dimensions": pooled,
        "varianceExplained": r2,
        "method": "kruskal_wallis",
        "byModel": by_model,
    }, warnings


def correlations(data: AnalysisInput) -> dict[str, Any]:
    """Per model and dimension: Pearson and Spearman correlation of the dimension's level
    with the decision over the model's decided transcripts, with Fisher-z 95 % intervals
    (scipy's for Pearson, Bonett–Wright's for Spearman); a sampled run's intervals have
    their z-scale half-width times the finite-population correction."""
    levels = data.levels[data.scenario_idx]
    decided = data.decided
    fpc = None if data.sample is None else data.sample.fpc
    result: dict[str, Any] = {}
    for i, model in enumerate(data.models):
        mine = decided & (data.model_idx == i)
        result[model] = {}
        for j, dim in enumerate(data.dimensions):
            rows = mine & ~np.isnan(levels[:, j])
            x, y = levels[rows, j], data.decision[rows]
            r = pearson_with_interval(x, y, fpc=fpc)
            rho = spearman_with_interval(x, y, fpc=fpc)
            result[model][dim] = {
                "n": int(rows.sum()),
                "pearson": {"r": r.value, "pValue": r.p_value, "interval": r.interval},
                "spearman": {"rho": rho.value, "pValue": rho.p_value, "interval": rho.interval},
            }
    return result
