"""Value sensitivities from the decisions alone (no judges): how far a stake moves a model.

Per model, one least-squares fit of the decision code on every dimension's level score (plus
an intercept) over the model's decided transcripts whose scenarios have every dimension the
model saw. A dimension's `coefficient` is the change of the expected decision, in points of
the definition's scale, for a one-level increase of that dimension's score, the others held
fixed. When both scale orders were asked, the order (0 as written, 1 reversed) is one more
column, so a position bias does not leak into the coefficients. The samples of one scenario
share the scenario and are not independent, so the covariance is cluster-robust by scenario:
CR2 with Bell–McCaffrey degrees of freedom (`cluster_robust.py`), which holds its coverage
with few scenarios where CR1 with t(G − 1) did not. The bench study
`bench/value_sensitivity.py` checks the 95 % intervals' coverage by parameter recovery.

Degenerate input gives null figures and a warning, never an exception: a dimension with one
level among the model's transcripts (`constant`), dimensions whose scores are collinear
(`collinear`: no coefficient can be told apart from the others'), too few scenarios for a
cluster-robust interval (the coefficient without an interval), no variation left.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from valuerank.analysis.cluster_robust import cr2_fit
from valuerank.analysis.data import AnalysisInput, FloatArray, IntArray
from valuerank.analysis.warning import AnalysisWarning

LEVEL = 0.95
METHOD = (
    "ols_cr2_by_scenario: per model, OLS of the decision code on the dimensions' "
    "level scores (coefficient = decision points per unit of the level score, others fixed); "
    "covariance "
    "cluster-robust by scenario (CR2, Bell-McCaffrey 2002); 95 % interval and p-value from "
    "Student's t with the Bell-McCaffrey/Imbens-Kolesar Satterthwaite degrees of freedom; no "
    "finite-population correction"
)
OK, CONSTANT, COLLINEAR, NO_DATA = "ok", "constant", "collinear", "no_data"


@dataclass(frozen=True)
class Estimate:
    """One dimension's effect for one model; None figures when it cannot be estimated."""

    coefficient: float | None
    lower: float | None
    upper: float | None
    p_value: float | None
    status: str


def estimable(design: FloatArray) -> tuple[list[int], list[int]]:
    """(columns kept for the fit, columns whose coefficient is identified). A column is kept
    when it adds to the rank of the columns before it; it is identified when the rank drops
    without it. The kept columns span the same space, so every identified coefficient is the
    same in the reduced fit as in any least-squares solution of the full one."""
    kept: list[int] = []
    rank = 0
    for j in range(design.shape[1]):
        if np.linalg.matrix_rank(design[:, [*kept, j]]) > rank:
            kept.append(j)
            rank += 1
    identified = [j for j in kept if np.linalg.matrix_rank(np.delete(design, j, axis=1)) < rank]
    return kept, identified


def fit_one(
    y: FloatArray, scores: FloatArray, groups: IntArray
) -> tuple[list[Estimate], str | None]:
    """Estimates for every column of `scores` (n × d), and why the intervals were withheld
    (`few` scenarios, an `exact` fit such as decisions all equal) or None. Columns with one
    level are `constant`."""
    d = scores.shape[1]
    varying = [j for j in range(d) if np.unique(scores[:, j]).size > 1]
    if not varying:  # nothing to fit (also: a single row or a single scenario)
        return [Estimate(None, None, None, None, CONSTANT) for _ in range(d)], None
    design = np.column_stack([np.ones(y.size), scores[:, varying]])
    kept, identified = estimable(design)
    clusters = np.unique(groups).size
    reduced = design[:, kept]
    if clusters <= len(kept):  # the cluster covariance has rank < G: it needs G > K
        params = np.linalg.lstsq(reduced, y, rcond=None)[0]
        bse = pvalues = np.full(len(kept), np.nan)
        bounds = np.full((len(kept), 2), np.nan)
        withheld: str | None = "few"
    else:
        with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
            # No residual variation divides by zero: those intervals are withheld below.
            warnings.simplefilter("ignore", RuntimeWarning)
            result = cr2_fit(y, reduced, groups, LEVEL)
        params, bse = result.params, result.bse
        bounds = np.column_stack([result.lower, result.upper])
        pvalues = result.pvalues
        exact = bool(np.allclose(result.resid, 0.0, atol=1e-9))
        withheld = "exact" if exact else None
    estimates = [Estimate(None, None, None, None, CONSTANT) for _ in range(d)]
    for position, column in enumerate(varying, start=1):
        if position not in identified:
            estimates[column] = Estimate(None, None, None, None, COLLINEAR)
            continue
        k = kept.index(position)
        usable = withheld is None and bool(np.isfinite(bse[k]) and bse[k] > 0)
        estimates[column] = Estimate(
            float(params[k]),
            float(bounds[k, 0]) if usable else None,
            float(bounds[k, 1]) if usable else None,
            float(pvalues[k]) if usable else None,
            OK,
        )
    return estimates, withheld


def _entry(value: str, estimate: Estimate, n: int, scenarios: int) -> dict[str, Any]:
    ci = None if estimate.lower is None else [estimate.lower, estimate.upper]
    return {
        "value": value,
        "coefficient": estimate.coefficient,
        "ci95": ci,
        "pValue": estimate.p_value,
        "n": n,
        "scenarios": scenarios,
        "status": estimate.status,
    }


def value_sensitivity(
    data: AnalysisInput,
) -> tuple[dict[str, dict[str, Any]], list[AnalysisWarning]]:
    """`valueSensitivity`: model → dimension → {value, coefficient, ci95, pValue, n, …}."""
    result: dict[str, dict[str, Any]] = {}
    flagged: dict[str, list[str]] = {
        key: [] for key in (CONSTANT, COLLINEAR, "few", "exact", "dropped")
    }
    levels = data.levels[data.scenario_idx]
    decided = data.decided
    for i, model in enumerate(data.models):
        mine = decided & (data.model_idx == i)
        seen = [j for j in range(len(data.dimensions)) if (~np.isnan(levels[mine, j])).any()]
        rows = mine & ~np.isnan(levels[:, seen]).any(axis=1)
        n, dropped = int(rows.sum()), int((mine & ~rows).sum())
        if dropped:
            flagged["dropped"].append(f"{model} ({dropped})")
        groups = data.scenario_idx[rows]
        scenarios = int(np.unique(groups).size)
        estimates = [Estimate(None, None, None, None, NO_DATA)] * len(data.dimensions)
        if n and seen:
            # The scale order as a covariate: constant (one order asked) it drops out of the
            # fit, so a run asked one way is fitted exactly as before.
            scores = np.column_stack([levels[np.ix_(rows, seen)], data.orders[rows]])
            fitted, withheld = fit_one(data.decision[rows], scores, groups)
            for j, estimate in zip(seen, fitted[: len(seen)], strict=True):
                estimates[j] = estimate
            if withheld == "few":
                flagged["few"].append(f"{model} ({scenarios} scenarios)")
            elif withheld == "exact":
                flagged["exact"].append(model)
        result[model] = {}
        for j, dim in enumerate(data.dimensions):
            estimate = estimates[j]
            if estimate.status in (CONSTANT, COLLINEAR):
                flagged[estimate.status].append(f"{model}: {dim}")
            value = data.dimension_values.get(dim, dim)
            result[model][dim] = _entry(value, estimate, n, scenarios)
    return result, _warnings(flagged)


def _warnings(flagged: dict[str, list[str]]) -> list[AnalysisWarning]:
    texts = {
        CONSTANT: (
            "SENSITIVITY_CONSTANT_DIMENSION",
            "Dimensions with a single level among a model's transcripts",
            "Their sensitivity is null: a stake that never changes cannot be measured",
        ),
        COLLINEAR: (
            "SENSITIVITY_COLLINEAR",
            "Dimensions whose scores move together (collinear)",
            "Their sensitivities are null: their effects cannot be told apart",
        ),
        "few": (
            "SENSITIVITY_FEW_SCENARIOS",
            "Too few scenarios for a cluster-robust interval",
            "Coefficients are shown without interval or p-value: run more scenarios",
        ),
        "exact": (
            "SENSITIVITY_EXACT_FIT",
            "The dimensions fit a model's decisions exactly (e.g. all equal)",
            "Coefficients are shown without interval or p-value: there is no noise to measure",
        ),
        "dropped": (
            "SENSITIVITY_INCOMPLETE_SCENARIOS",
            "Decided transcripts left out of the sensitivity fit (their scenarios lack a "
            "dimension)",
            "The fit uses the transcripts whose scenarios have every dimension",
        ),
    }
    found = []
    for key, (code, message, advice) in texts.items():
        if flagged[key]:
            found.append(AnalysisWarning(code, f"{message}: {', '.join(flagged[key])}", advice))
    return found
