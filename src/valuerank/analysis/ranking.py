"""The uncertainty of the ranking of values: each value's rank with a 95 % interval and, for
every pair, P(A ranked above B), by a bootstrap that resamples scenarios (pure, no I/O).

A model's values are ranked two ways, whichever the run supports:

* `winRate`: by the judges' win rate p / (p + d) (profile.py's figure; 0.5 without verdicts),
  highest first — the ranking the run's value figures already imply.
* `sensitivity`: by how far a stronger stake of the value moves the decision, |coefficient|
  of the value sensitivity fit (sensitivity.py: OLS of the decision on the level scores, the
  scale order as a covariate when both were asked), largest first; no judges needed.

Each replicate draws the model's scenarios with replacement (the scenario is the unit: its
samples, phrasings and orders go together) and recomputes every value's figure from
per-scenario sums, so 1,000 replicates are a few matrix products: the win rates from the
per-scenario verdict counts, the fit from per-scenario X'X and X'y (a batched solve, the
pseudo-inverse when a resample leaves a column constant). A value's rank in a replicate is
1 + the number of values strictly ahead of it (ties share the better rank); its interval is
the 2.5 and 97.5 percentiles of those ranks; P(A above B) is the share of replicates with A
ahead, ties counting half. Seeded: the same run gives the same figures.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from valuerank.analysis.data import AnalysisInput, FloatArray
from valuerank.analysis.paired import resample_weights, win

REPLICATES = 1000
SEED = 20261207
METHOD = (
    "scenario_bootstrap_ranks: 1000 seeded replicates resampling the model's scenarios with "
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
def _weights(scenarios: int, seed: int, replicates: int) -> FloatArray:
    """The resamples of `scenarios` scenarios: the same for every model (and ranking) with as
    many scenarios, so they are drawn once per analysis."""
    weights = resample_weights(scenarios, replicates, np.random.default_rng(seed))
    weights.flags.writeable = False
    return weights


def _solve(gram: FloatArray, cross: FloatArray) -> FloatArray:
    """Least-squares coefficients of each replicate; the pseudo-inverse only when some
    resample leaves a column constant (singular)."""
    try:
        solved = np.linalg.solve(gram, cross[..., None])[..., 0]
    except np.linalg.LinAlgError:
        solved = np.einsum("rij,rj->ri", np.linalg.pinv(gram), cross)
    return np.asarray(solved, dtype=float)


def win_rate_ranking(
    data: AnalysisInput, model: int, *, replicates: int = REPLICATES, seed: int = SEED
) -> dict[str, Any] | None:
    """The ranking of values by win rate for one model; None without two values judged."""
    rows = (data.model_idx == model) & data.judged
    status = data.value_status[rows]
    groups = np.unique(data.scenario_idx[rows], return_inverse=True)[1].reshape(-1)
    scenarios = int(groups.max() + 1) if groups.size else 0
    judged_values = np.flatnonzero((status != 0).any(axis=0))
    if judged_values.size < 2 or scenarios < 2:
        return None
    status = status[:, judged_values]
    pri = np.zeros((scenarios, judged_values.size))  # verdicts per scenario and value
    dep = np.zeros_like(pri)
    np.add.at(pri, groups, (status > 0).astype(float))
    np.add.at(dep, groups, (status < 0).astype(float))
    weights = _weights(scenarios, seed, replicates)
    draws = win(weights @ pri, weights @ dep)
    estimate = win(pri.sum(axis=0), dep.sum(axis=0))
    names = [data.values[j] for j in judged_values.tolist()]
    return rank_summary(names, estimate, draws, scenarios)


def sensitivity_ranking(
    data: AnalysisInput, model: int, *, replicates: int = REPLICATES, seed: int = SEED
) -> dict[str, Any] | None:
    """The ranking of values by |value sensitivity| for one model (the rows and columns
    value_sensitivity fits); None without two dimensions that vary."""
    rows = data.decided & (data.model_idx == model)
    levels = data.levels[data.scenario_idx]
    seen = [j for j in range(len(data.dimensions)) if (~np.isnan(levels[rows, j])).any()]
    rows &= ~np.isnan(levels[:, seen]).any(axis=1)
    scores = levels[np.ix_(rows, seen)]
    varying = [k for k in range(len(seen)) if np.unique(scores[:, k]).size > 1]
    groups = np.unique(data.scenario_idx[rows], return_inverse=True)[1].reshape(-1)
    scenarios = int(groups.max() + 1) if groups.size else 0
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
    gram = np.zeros((scenarios, k * k))
    np.add.at(gram, groups, np.einsum("ni,nj->nij", design, design).reshape(-1, k * k))
    cross = np.zeros((scenarios, k))
    np.add.at(cross, groups, design * y[:, None])
    weights = _weights(scenarios, seed, replicates)
    fits = _solve((weights @ gram).reshape(-1, k, k), weights @ cross)
    columns = slice(1, 1 + len(varying))
    draws = np.abs(fits[:, columns])
    estimate = np.abs(np.linalg.lstsq(design, y, rcond=None)[0][columns])
    dims = [data.dimensions[seen[k]] for k in varying]
    names = [data.dimension_values.get(d, d) for d in dims]
    if len(set(names)) < len(names):  # two dimensions of one value: keep them apart
        names = [
            f"{n} ({d})" if names.count(n) > 1 else n for n, d in zip(names, dims, strict=True)
        ]
    return rank_summary(names, estimate, draws, scenarios)


def ranking(data: AnalysisInput, model: int) -> dict[str, Any]:
    """`robustness[model].ranking`: both rankings (each None when the run lacks it)."""
    return {
        "winRate": win_rate_ranking(data, model),
        "sensitivity": sensitivity_ranking(data, model),
    }
