"""The uncertainty of the ranking of values: each value's rank with a 95 % interval and, for
every pair, P(A ranked above B), by a bootstrap that resamples scenarios (pure, no I/O).

A model's values are ranked two ways, whichever the run supports:

* `winRate`: by the judges' win rate p / (p + d) (profile.py's figure; 0.5 without verdicts),
  highest first — the ranking the run's value figures already imply.
* `sensitivity`: by how far a stronger stake of the value moves the decision, |coefficient|
  of the value sensitivity fit (sensitivity.py: OLS of the decision on the level scores, the
  scale order as a covariate when both were asked), largest first; no judges needed.

Each replicate draws the run's scenarios with replacement (the scenario is the unit: its
samples, phrasings and orders go together; a scenario a model did not answer adds nothing to
its figures) and recomputes every value's figure from per-scenario sums: the win rates from
the verdict counts, the fit from X'X and X'y (a batched solve, the pseudo-inverse when a
resample leaves a column constant). Every model and both rankings share the resamples, drawn
once, and go through one matrix product (float32: exact for sums of small integers such as
verdict counts and integer level scores): 1,000 replicates of a 10-model, 1,000-scenario run
take a fraction of a second. A value's rank in a replicate is 1 + the number of values
strictly ahead of it (ties share the better rank); its interval is the 2.5 and 97.5
percentiles of those ranks; P(A above B) is the share of replicates with A ahead, ties
counting half. Seeded: the same run gives the same figures.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from valuerank.analysis.data import AnalysisInput, FloatArray
from valuerank.analysis.paired import resample_weights, win

REPLICATES = 1000
SEED = 20261207
METHOD = (
    "scenario_bootstrap_ranks: 1000 seeded replicates resampling the run's scenarios with "
    "replacement (samples, phrasings and orders of a scenario together); per replicate each "
    "value's win rate (judges) and |value sensitivity| (OLS refit, order covariate when both "
    "orders were asked) are recomputed and ranked (1 = highest, ties share the better rank); "
    "rank interval = 2.5/97.5 percentiles, P(A above B) = share of replicates (ties half)"
)


def rank_summary(
    names: list[str], estimate: FloatArray, draws: FloatArray, scenarios: int
) -> dict[str, Any]:
    """Ranks of the point `estimate` (v,) with intervals from `draws` (replicates × v)."""
    ahead = (draws[:, None, :] > draws[:, :, None]).sum(axis=2)  # [r, a]: values above a
    ranks = 1 + ahead
    lower = np.floor(np.percentile(ranks, 2.5, axis=0)).astype(int)
    upper = np.ceil(np.percentile(ranks, 97.5, axis=0)).astype(int)
    point = 1 + (estimate[None, :] > estimate[:, None]).sum(axis=1)
    above = (draws[:, :, None] > draws[:, None, :]).mean(axis=0)
    tied = (draws[:, :, None] == draws[:, None, :]).mean(axis=0)
    chance = above + tied / 2
    order = np.lexsort((np.arange(len(names)), point))
    return {
        "values": [
            {
                "value": names[a],
                "estimate": float(estimate[a]),
                "rank": int(point[a]),
                "ci95": [int(lower[a]), int(upper[a])],
            }
            for a in order.tolist()
        ],
        "pAbove": {
            names[a]: {names[b]: float(chance[a, b]) for b in range(len(names)) if b != a}
            for a in range(len(names))
        },
        "replicates": int(draws.shape[0]),
        "scenarios": scenarios,
    }


@functools.lru_cache(maxsize=4)
def _weights(scenarios: int, seed: int, replicates: int) -> Any:
    """The resamples of the run's `scenarios` scenarios: the same for every model and
    ranking, so they are drawn once per analysis."""
    weights = resample_weights(scenarios, replicates, np.random.default_rng(seed))
    # float32: the sums below are of small integers (verdict counts, integer level scores
    # times decision codes), exact in float32, and the product takes half the time.
    single = weights.astype(np.float32)
    single.flags.writeable = False
    return single


def _summed(weights: Any, columns: FloatArray) -> FloatArray:
    """Per replicate, the weighted sum of each column over scenarios (exact: see _weights)."""
    return np.asarray(weights @ columns.astype(np.float32), dtype=float)


def _solve(gram: FloatArray, cross: FloatArray) -> FloatArray:
    """Least-squares coefficients of each replicate; the pseudo-inverse only when some
    resample leaves a column constant (singular)."""
    try:
        solved = np.linalg.solve(gram, cross[..., None])[..., 0]
    except np.linalg.LinAlgError:
        solved = np.einsum("rij,rj->ri", np.linalg.pinv(gram), cross)
    return np.asarray(solved, dtype=float)


@dataclass(frozen=True)
class _Pending:
    """A ranking waiting for its resamples: the per-scenario sums to resample, and what makes
    the ranking of their (replicates × columns) weighted sums. All models' and both
    rankings' columns go through one product, which reads the weights once."""

    columns: FloatArray  # (scenarios, c)
    finish: Callable[[FloatArray], dict[str, Any]]


def _win_pending(data: AnalysisInput, model: int) -> _Pending | None:
    """The win-rate ranking of one model; None without two values judged."""
    rows = (data.model_idx == model) & data.judged
    status = data.value_status[rows]
    groups = data.scenario_idx[rows]
    scenarios = int(np.unique(groups).size)
    judged_values = np.flatnonzero((status != 0).any(axis=0))
    if judged_values.size < 2 or scenarios < 2:
        return None
    status = status[:, judged_values]
    v = judged_values.size
    pri = np.zeros((len(data.scenarios), v))  # verdicts per scenario and value
    dep = np.zeros_like(pri)
    np.add.at(pri, groups, (status > 0).astype(float))
    np.add.at(dep, groups, (status < 0).astype(float))
    estimate = win(pri.sum(axis=0), dep.sum(axis=0))
    names = [data.values[j] for j in judged_values.tolist()]

    def finish(summed: FloatArray) -> dict[str, Any]:
        draws = win(summed[:, :v], summed[:, v:])
        return rank_summary(names, estimate, draws, scenarios)

    return _Pending(np.hstack([pri, dep]), finish)


def _sensitivity_pending(data: AnalysisInput, model: int) -> _Pending | None:
    """The |sensitivity| ranking of one model (the rows and columns value_sensitivity
    fits); None without two dimensions that vary, or with collinear ones."""
    rows = data.decided & (data.model_idx == model)
    levels = data.levels[data.scenario_idx]
    seen = [j for j in range(len(data.dimensions)) if (~np.isnan(levels[rows, j])).any()]
    rows &= ~np.isnan(levels[:, seen]).any(axis=1)
    scores = levels[np.ix_(rows, seen)]
    varying = [k for k in range(len(seen)) if np.unique(scores[:, k]).size > 1]
    groups = data.scenario_idx[rows]
    scenarios = int(np.unique(groups).size)
    if len(varying) < 2 or scenarios < 2:
        return None
    order = data.orders[rows].astype(float)
    extra = [order] if np.unique(order).size > 1 else []
    design = np.column_stack([np.ones(groups.size), scores[:, varying], *extra])
    if np.linalg.matrix_rank(design) < design.shape[1]:
        return None  # collinear stakes: sensitivity.py reports them as such
    y = data.decision[rows]
    k = design.shape[1]
    # Per-scenario sufficient statistics: X_g'X_g (flattened) and X_g'y_g.
    gram = np.zeros((len(data.scenarios), k * k))
    np.add.at(gram, groups, np.einsum("ni,nj->nij", design, design).reshape(-1, k * k))
    cross = np.zeros((len(data.scenarios), k))
    np.add.at(cross, groups, design * y[:, None])
    columns = slice(1, 1 + len(varying))
    estimate = np.abs(np.linalg.lstsq(design, y, rcond=None)[0][columns])
    dims = [data.dimensions[seen[k]] for k in varying]
    names = [data.dimension_values.get(d, d) for d in dims]
    if len(set(names)) < len(names):  # two dimensions of one value: keep them apart
        names = [
            f"{n} ({d})" if names.count(n) > 1 else n for n, d in zip(names, dims, strict=True)
        ]

    def finish(summed: FloatArray) -> dict[str, Any]:
        fits = _solve(summed[:, : k * k].reshape(-1, k, k), summed[:, k * k :])
        return rank_summary(names, estimate, np.abs(fits[:, columns]), scenarios)

    return _Pending(np.hstack([gram, cross]), finish)


def _finish_all(
    pending: list[_Pending | None], data: AnalysisInput, replicates: int, seed: int
) -> list[dict[str, Any] | None]:
    """Every pending ranking from one product of the resample weights."""
    present = [p for p in pending if p is not None]
    if not present:
        return [None] * len(pending)
    weights = _weights(len(data.scenarios), seed, replicates)
    summed = _summed(weights, np.hstack([p.columns for p in present]))
    results: list[dict[str, Any] | None] = []
    start = 0
    for p in pending:
        if p is None:
            results.append(None)
            continue
        width = p.columns.shape[1]
        results.append(p.finish(summed[:, start : start + width]))
        start += width
    return results


def win_rate_ranking(
    data: AnalysisInput, model: int, *, replicates: int = REPLICATES, seed: int = SEED
) -> dict[str, Any] | None:
    """The ranking of values by win rate for one model; None without two values judged."""
    return _finish_all([_win_pending(data, model)], data, replicates, seed)[0]


def sensitivity_ranking(
    data: AnalysisInput, model: int, *, replicates: int = REPLICATES, seed: int = SEED
) -> dict[str, Any] | None:
    """The ranking of values by |value sensitivity| for one model; None without two
    dimensions that vary."""
    return _finish_all([_sensitivity_pending(data, model)], data, replicates, seed)[0]


def rankings(
    data: AnalysisInput, *, replicates: int = REPLICATES, seed: int = SEED
) -> list[dict[str, Any]]:
    """`robustness[model].ranking` of every model (in `data.models` order): both rankings,
    each None when the run lacks it."""
    pending: list[_Pending | None] = []
    for i in range(len(data.models)):
        pending += [_win_pending(data, i), _sensitivity_pending(data, i)]
    done = _finish_all(pending, data, replicates, seed)
    return [
        {"winRate": done[2 * i], "sensitivity": done[2 * i + 1]} for i in range(len(data.models))
    ]
