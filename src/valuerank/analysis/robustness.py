"""How far a model's decisions survive the way a scenario is asked (pure, no I/O).

`robustness[model]`, from the decisions mapped back to the definition's direction
(data.py: `order`, `phrasing`; the scenario unit is the level combination):

* `orderEffect`: the mean over scenarios of (mean as written − mean reversed) — within each
  phrasing, averaged over the scenario's phrasings asked both ways —, over the scenarios
  decided in both orders: a paired difference, so its t interval over the
  scenarios' differences is the estimate clustered by scenario. Positive: a pull towards the
  higher number *shown* (a persona pulled b points up the shown scale gives 2b on an
  unclipped scale). Null, with the reason, when one order was asked.
* `phrasingEffect`: `shift`, the mean over scenarios of (mean of the other phrasings − mean
  of the first), within each order and averaged over the orders, paired like the order
  effect; `varianceShare`, the share of the
  within-scenario decision variance the phrasing explains, adjusted for the cells' sizes like
  an adjusted R² (1 − residual mean square / within-scenario mean square: pure sampling
  noise gives ≈ 0, not the share chance gives); `largestDifference`, per scenario the largest
  gap between its phrasings' mean decisions, averaged over scenarios, with the scenario where
  it is largest. Intervals of the share and the gap: percentile bootstrap by scenario (the
  share's covered 0 in 90 % of 150 simulated runs without a wording effect, 40 scenarios:
  read it as descriptive); the share's p-value is the nested F-test of the phrasing within
  scenarios (scenario, then scenario × phrasing).
* `consistency`: the share of scenarios (asked at least twice) whose decisions all lie within
  one point — across orders, phrasings and samples — with Wilson's interval over scenarios;
  each scenario's Shannon entropy (bits) of its decision codes, their mean, and the most
  inconsistent scenarios (largest spread, then entropy).
* `ranking`: ranking.py.

ORDER_BIAS when the order effect's 95 % interval excludes zero, WORDING_SENSITIVE when the
phrasing shift's does (one test each, so a persona without bias is flagged ≈ 5 % of runs).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from valuerank.analysis.data import CODES, AnalysisInput, BoolArray, FloatArray, IntArray
from valuerank.analysis.intervals import mean_interval, percentile_interval, wilson
from valuerank.analysis.paired import resample_weights
from valuerank.analysis.ranking import METHOD as RANKING_METHOD
from valuerank.analysis.ranking import rankings
from valuerank.analysis.warning import AnalysisWarning

REPLICATES = 1000
SEED = 20261208
INCONSISTENT_LIMIT = 5
METHOD = {
    "orderEffect": "paired_t_over_scenarios: per scenario mean(as written) - mean(reversed) "
    "of the mapped decision, t interval and p over the scenarios decided in both orders",
    "phrasingEffect": "shift: paired t over scenarios (other phrasings - first); "
    "varianceShare: adjusted within-scenario eta^2 of the phrasing, p from the nested F-test "
    "(scenario, then scenario x phrasing); largestDifference: mean "
    "over scenarios of the max-min phrasing means; intervals: 1000 seeded scenario-bootstrap "
    "replicates (percentile)",
    "consistency": "share of scenarios asked >= 2 times whose decisions span <= 1 point, "
    "Wilson interval over scenarios; entropy in bits of each scenario's decision codes",
    "ranking": RANKING_METHOD,
    "orderCovariate": "value sensitivities add the scale order (0/1) as a covariate when a "
    "model was asked both orders",
}
NO_ORDERS = "only one scale order was asked"
NO_PAIRED_ORDERS = "no scenario was decided in both scale orders"
NO_PHRASINGS = "only one phrasing was asked"
NO_PAIRED_PHRASINGS = "no scenario was decided in two phrasings"
NO_REPEATS = "every scenario was asked once: there is nothing to be consistent with"


def presentation_means(data: AnalysisInput, rows: BoolArray) -> FloatArray:
    """(scenarios, phrasings, 2 orders): the mean decision of each presentation over the
    decided transcripts in `rows`; NaN where none."""
    decided = rows & data.decided
    shape = (len(data.scenarios), len(data.phrasings), 2)
    cell = np.ravel_multi_index(
        (data.scenario_idx[decided], data.phrasing_idx[decided], data.orders[decided]), shape
    )
    size = int(np.prod(shape))
    counts = np.bincount(cell, minlength=size)
    sums = np.bincount(cell, weights=data.decision[decided], minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return means.reshape(shape)


def _nanmean(x: FloatArray, axis: int) -> FloatArray:
    """`np.nanmean` without its warning on all-NaN slices (they stay NaN)."""
    have = ~np.isnan(x)
    total = np.where(have, x, 0.0).sum(axis=axis)
    count = have.sum(axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def paired_effect(differences: FloatArray) -> dict[str, Any]:
    """{value, ci95, pValue, n}: the mean of per-scenario differences with its t interval
    and the one-sample t-test's p (interval and p null below two scenarios or no spread)."""
    n = int(differences.size)
    value = float(differences.mean()) if n else None
    spread = n >= 2 and float(differences.std(ddof=1)) > 0
    bounds = mean_interval(differences) if spread else None
    p = float(stats.ttest_1samp(differences, 0.0).pvalue) if spread else None
    return {"value": value, "ci95": None if bounds is None else list(bounds), "pValue": p, "n": n}


def order_effect(data: AnalysisInput, rows: BoolArray) -> tuple[dict[str, Any] | None, str | None]:
    """The order effect over the decided transcripts in `rows`; (None, reason) when absent."""
    if np.unique(data.orders[rows]).size < 2:
        return None, NO_ORDERS
    # Paired within each phrasing, then averaged over the scenario's phrasings: a phrasing
    # asked in one order only cannot pass for an order effect.
    means = presentation_means(data, rows)
    per_scenario = _nanmean(means[:, :, 0] - means[:, :, 1], axis=1)
    both = ~np.isnan(per_scenario)
    if not both.any():
        return None, NO_PAIRED_ORDERS
    return paired_effect(per_scenario[both]), None


def _phrasing_stats(
    g: IntArray, p: IntArray, y: FloatArray, size: int, phrasings: int
) -> tuple[FloatArray, ...]:
    """Per scenario: (transcripts, phrasing cells, within-scenario SS, residual SS, largest
    gap between phrasing means)."""
    cell = g * phrasings + p
    n_cell = np.bincount(cell, minlength=size * phrasings).reshape(size, phrasings)
    s_cell = np.bincount(cell, weights=y, minlength=size * phrasings).reshape(size, phrasings)
    q_cell = np.bincount(cell, weights=y * y, minlength=size * phrasings).reshape(size, phrasings)
    n = n_cell.sum(axis=1).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = s_cell.sum(axis=1) / n
        cell_mean = np.where(n_cell > 0, s_cell / np.maximum(n_cell, 1), np.nan)
    within = q_cell.sum(axis=1) - n * np.nan_to_num(mean) ** 2
    residual = (q_cell - np.where(n_cell > 0, s_cell**2 / np.maximum(n_cell, 1), 0.0)).sum(axis=1)
    with np.errstate(invalid="ignore"):
        gap = np.nanmax(cell_mean, axis=1, initial=-np.inf) - np.nanmin(
            cell_mean, axis=1, initial=np.inf
        )
    cells = (n_cell > 0).sum(axis=1).astype(float)
    return n, cells, np.maximum(within, 0), np.maximum(residual, 0), gap


def phrasing_effect(
    data: AnalysisInput, rows: BoolArray, *, replicates: int = REPLICATES, seed: int = SEED
) -> tuple[dict[str, Any] | None, str | None]:
    """The phrasing effect over the decided transcripts in `rows`; (None, reason) if absent."""
    if np.unique(data.phrasing_idx[rows]).size < 2:
        return None, NO_PHRASINGS
    decided = rows & data.decided
    units, g = np.unique(data.scenario_idx[decided], return_inverse=True)
    g = g.reshape(-1)
    n, cells, within, residual, gap = _phrasing_stats(
        g, data.phrasing_idx[decided], data.decision[decided], units.size, len(data.phrasings)
    )
    several = cells >= 2  # scenarios decided in two phrasings or more
    if not several.any():
        return None, NO_PAIRED_PHRASINGS
    # Shift: paired within each order (other phrasings' mean − the first's), then averaged
    # over the scenario's orders.
    means = presentation_means(data, rows)
    others = _nanmean(means[:, 1:, :], axis=1)
    per_scenario = _nanmean(others - means[:, 0, :], axis=1)
    paired = ~np.isnan(per_scenario)
    shift = paired_effect(per_scenario[paired])
    # Only scenarios with several phrasings carry phrasing variance; sums per replicate.
    stack = np.column_stack([n, cells, within, residual, np.nan_to_num(gap)])[several]
    k = int(several.sum())
    weights = np.vstack([np.ones(k), resample_weights(k, replicates, np.random.default_rng(seed))])
    total = weights @ stack  # (1 + replicates, 5)
    groups = weights.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = 1 - (total[:, 3] / (total[:, 0] - total[:, 1])) / (
            total[:, 2] / (total[:, 0] - groups)
        )
        mean_gap = total[:, 4] / groups
    share_ci = _percentiles(share[1:])
    # F-test of the phrasing within scenarios (nested: scenario, then scenario × phrasing).
    df_phrasing, df_residual = total[0, 1] - k, total[0, 0] - total[0, 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        f = ((total[0, 2] - total[0, 3]) / df_phrasing) / (total[0, 3] / df_residual)
    p_share = _finite(stats.f.sf(f, df_phrasing, df_residual)) if df_residual > 0 else None
    widest = int(np.argmax(np.where(several, np.nan_to_num(gap), -1.0)))
    return {
        "shift": shift,
        "varianceShare": {
            "value": _finite(share[0]),
            "ci95": share_ci,
            "pValue": p_share,
            "scenarios": k,
        },
        "largestDifference": {
            "value": float(mean_gap[0]),
            "ci95": _percentiles(mean_gap[1:]),
            "scenarioId": data.scenarios[int(units[widest])],
            "max": float(gap[widest]),
        },
        "phrasings": len(np.unique(data.phrasing_idx[decided])),
    }, None


def _finite(x: Any) -> float | None:
    return float(x) if np.isfinite(x) else None


def _percentiles(draws: FloatArray) -> list[float] | None:
    finite = draws[np.isfinite(draws)]
    if finite.size < draws.size * 0.9:  # mostly undefined (no residual degrees of freedom)
        return None
    lower, upper = percentile_interval(finite)
    return [float(lower), float(upper)]


def consistency(
    data: AnalysisInput, rows: BoolArray, limit: int = INCONSISTENT_LIMIT
) -> tuple[dict[str, Any] | None, str | None]:
    """Consistency over the decided transcripts in `rows`; (None, reason) when no scenario
    was decided twice."""
    decided = rows & data.decided
    size = len(data.scenarios)
    g = data.scenario_idx[decided]
    codes = data.decision[decided].astype(int) - int(CODES[0])
    counts = np.bincount(g * CODES.size + codes, minlength=size * CODES.size)
    table = counts.reshape(size, CODES.size).astype(float)
    asked = table.sum(axis=1)
    repeated = np.flatnonzero(asked >= 2)
    if repeated.size == 0:
        return None, NO_REPEATS
    present = table > 0
    low = np.argmax(present, axis=1)
    high = CODES.size - 1 - np.argmax(present[:, ::-1], axis=1)
    spread = (high - low).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = table / asked[:, None]
        # `0.0 -`: a scenario of one code is 0 bits, not -0 (which views print as -0.00).
        entropy = 0.0 - np.nansum(np.where(share > 0, share * np.log2(share), 0.0), axis=1)
    agree = int((spread[repeated] <= 1).sum())
    lower, upper = wilson(agree, repeated.size)
    worst = repeated[np.lexsort((repeated, -entropy[repeated], -spread[repeated]))][:limit]
    return {
        "value": agree / repeated.size,
        "ci95": [float(lower), float(upper)],
        "agreeing": agree,
        "scenarios": int(repeated.size),
        "entropy": {
            "mean": float(entropy[repeated].mean()),
            "perScenario": {data.scenarios[j]: float(entropy[j]) for j in repeated.tolist()},
        },
        "mostInconsistent": [
            {
                "scenarioId": data.scenarios[j],
                "scenarioName": data.scenario_names[j],
                "spread": float(spread[j]),
                "entropy": float(entropy[j]),
                "transcripts": int(asked[j]),
            }
            for j in worst.tolist()
            if spread[j] > 1
        ],
    }, None


def robustness(data: AnalysisInput) -> tuple[dict[str, Any], list[AnalysisWarning]]:
    """`robustness`: model → {orderEffect, phrasingEffect, consistency, ranking, reasons}."""
    result: dict[str, Any] = {}
    biased: list[str] = []
    worded: list[str] = []
    ranked = rankings(data)
    for i, model in enumerate(data.models):
        rows = data.model_idx == i
        order, why_order = order_effect(data, rows)
        phrasing, why_phrasing = phrasing_effect(data, rows)
        agreed, why_consistency = consistency(data, rows)
        reasons = {
            key: why
            for key, why in (
                ("orderEffect", why_order),
                ("phrasingEffect", why_phrasing),
                ("consistency", why_consistency),
            )
            if why is not None
        }
        result[model] = {
            "orderEffect": order,
            "phrasingEffect": phrasing,
            "consistency": agreed,
            "ranking": ranked[i],
            "reasons": reasons,
        }
        if order is not None and _excludes_zero(order["ci95"]):
            biased.append(f"{model} ({order['value']:+.2f} points)")
        if phrasing is not None and _excludes_zero(phrasing["shift"]["ci95"]):
            worded.append(model)
    return result, robustness_warnings(biased, worded)


def _excludes_zero(ci: list[float] | None) -> bool:
    return ci is not None and (ci[0] > 0 or ci[1] < 0)


def robustness_warnings(biased: list[str], worded: list[str]) -> list[AnalysisWarning]:
    found = []
    if biased:
        found.append(
            AnalysisWarning(
                "ORDER_BIAS",
                "Decisions move with the order the scale was shown in (as written minus "
                f"reversed; positive: towards the higher number shown): {', '.join(biased)}",
                "Part of these models' decisions follows where an answer sits on the scale, "
                "not the stakes: their mean decisions and win rates mix the two orders (read "
                "them as averages over both), and their value sensitivities are estimated "
                "with the order as a covariate",
            )
        )
    if worded:
        found.append(
            AnalysisWarning(
                "WORDING_SENSITIVE",
                f"Decisions change with the phrasing of a scenario: {', '.join(worded)}",
                "These models' value figures hold for the wordings asked, not for the values "
                "as such: compare the phrasings of the most affected scenarios before "
                "generalising",
            )
        )
    return found
