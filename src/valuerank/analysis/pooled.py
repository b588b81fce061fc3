"""Value win rates pooled over several runs: a definition's leaderboard (models × values).

Each run gives its judged transcripts' verdicts per model, value and scenario
(`run_verdicts`). A value counts only in the runs whose values include it (the rubric the
judges read, or a value they named): a transcript judged against a rubric without the value
is no evidence about it, not a neutral verdict. Pooled (`pool_win_rates`), a cell's win rate
is Σ prioritised / Σ (prioritised + deprioritised) over every contributing run — the runs'
judged counts added, so a run weighs by its verdicts, not equally — with the neutral ones
(judged, the value on neither list) counted beside.

The interval is the one a run's analysis gives (profile.py) over the pooled verdicts: the
scenario is the unit. A scenario id asked in several runs (or in several versions that keep
the ids) is one cluster with its verdicts summed, and the interval is Wilson's at Kish's
effective size of the two-stage variance (clustered.py) with g = 1: no finite-population
correction, since the pooled runs sample different versions and there is no one population
to correct towards (the conservative choice). For a single run of an unknown population the
pooled cell is exactly that run's win rate and interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from valuerank.analysis.clustered import effective_size, two_stage
from valuerank.analysis.data import AnalysisInput, FloatArray, IntArray
from valuerank.analysis.intervals import wilson

POOLED_METHOD = "wilson_score_scenario_clustered_pooled"
# The page and the API state how a cell is computed in these words.
POOLED_HOW = (
    "Each cell pools every completed run of any version of the definition's tree: win rate = "
    "prioritised / (prioritised + deprioritised) over all their judged transcripts (each run "
    "weighs by its verdicts; neutral ones are counted, not in the rate). The 95% interval is "
    "Wilson's at the effective sample size of a scenario-clustered variance: a scenario asked "
    "in several runs is one unit, and no finite-population correction is applied. A value "
    "counts only in runs whose judges could name it."
)


@dataclass(frozen=True)
class RunVerdicts:
    """One run's judged verdicts by model, value and scenario."""

    run_id: str
    models: tuple[str, ...]
    values: tuple[str, ...]
    scenarios: tuple[str, ...]
    prioritized: FloatArray  # (models, values, scenarios)
    deprioritized: FloatArray  # (models, values, scenarios)
    judged: FloatArray  # (models,): judged transcripts
    transcripts: FloatArray  # (models,): all transcripts


@dataclass(frozen=True)
class PooledCell:
    """One model × value of the leaderboard."""

    win_rate: float | None  # None without a decisive verdict
    lower: float | None
    upper: float | None
    prioritized: int
    deprioritized: int
    neutral: int
    runs: int  # runs with judged transcripts of the model that could name the value
    transcripts: int  # those judged transcripts
    scenarios: int  # scenarios with a decisive verdict: the interval's units


def run_verdicts(run_id: str, data: AnalysisInput) -> RunVerdicts:
    """The run's verdict counts (only judged transcripts carry a verdict)."""
    m, s = data.shape
    v = len(data.values)
    rows, cols = np.nonzero(data.value_status * data.judged[:, None].astype(np.int8))
    flat = (data.model_idx[rows] * v + cols) * s + data.scenario_idx[rows]
    up = data.value_status[rows, cols] > 0
    size = m * v * s
    pri = np.bincount(flat[up], minlength=size).astype(float).reshape(m, v, s)
    dep = np.bincount(flat[~up], minlength=size).astype(float).reshape(m, v, s)
    judged = np.bincount(data.model_idx, weights=data.judged.astype(float), minlength=m)
    transcripts = np.bincount(data.model_idx, minlength=m).astype(float)
    return RunVerdicts(
        run_id=run_id,
        models=data.models,
        values=data.values,
        scenarios=data.scenarios,
        prioritized=pri,
        deprioritized=dep,
        judged=judged.astype(float),
        transcripts=transcripts,
    )


def _index(names: Sequence[str], universe: dict[str, int]) -> IntArray:
    return np.fromiter((universe[n] for n in names), dtype=np.intp, count=len(names))


def pool_win_rates(runs: Sequence[RunVerdicts]) -> dict[str, dict[str, PooledCell | None]]:
    """model → value → its pooled cell, None where no run of the model could judge the value
    (models and values sorted)."""
    models = sorted({m for r in runs for m in r.models})
    values = sorted({v for r in runs for v in r.values})
    scenarios = sorted({s for r in runs for s in r.scenarios})
    at_model = {name: i for i, name in enumerate(models)}
    at_value = {name: i for i, name in enumerate(values)}
    at_scenario = {name: i for i, name in enumerate(scenarios)}
    shape = (len(models), len(values), len(scenarios))
    pri, dep = np.zeros(shape), np.zeros(shape)
    judged, counted = np.zeros(shape[:2]), np.zeros(shape[:2])
    for run in runs:
        mi = _index(run.models, at_model)
        vi = _index(run.values, at_value)
        si = _index(run.scenarios, at_scenario)
        # Within a run every index is distinct, so += through np.ix_ adds each cell once.
        pri[np.ix_(mi, vi, si)] += run.prioritized
        dep[np.ix_(mi, vi, si)] += run.deprioritized
        judged[np.ix_(mi, vi)] += run.judged[:, None]
        counted[np.ix_(mi, vi)] += (run.judged > 0)[:, None]
    both = pri + dep
    with np.errstate(invalid="ignore", divide="ignore"):
        within = np.where(both > 0, pri * dep / np.maximum(both, 1), 0.0)
    fit = two_stage(pri, both, within, 1.0)
    p_total, d_total = pri.sum(axis=-1), dep.sum(axis=-1)
    lower, upper = wilson(p_total, p_total + d_total, effective=effective_size(fit))
    found: dict[str, dict[str, PooledCell | None]] = {}
    for i, model in enumerate(models):
        row: dict[str, PooledCell | None] = {}
        for j, value in enumerate(values):
            if counted[i, j] == 0:
                row[value] = None
                continue
            p, d = int(p_total[i, j]), int(d_total[i, j])
            decisive = p + d > 0
            row[value] = PooledCell(
                win_rate=p / (p + d) if decisive else None,
                lower=float(lower[i, j]) if decisive else None,
                upper=float(upper[i, j]) if decisive else None,
                prioritized=p,
                deprioritized=d,
                neutral=int(judged[i, j]) - p - d,
                runs=int(counted[i, j]),
                transcripts=int(judged[i, j]),
                scenarios=int(fit.scenarios[i, j]),
            )
        found[model] = row
    return found
