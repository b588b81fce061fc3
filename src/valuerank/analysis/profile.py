"""Per-model value profiles: decisions, refusals, value win rates, contested scenarios.

`perModel[model]` keeps the original cloud worker's keys: `sampleSize` (all transcripts),
`overall{mean, stdDev (ddof=1), min, max}` over the decided ones, and `values[v]{winRate,
confidenceInterval, count}` with winRate = p / (p + d) — neutral excluded; 0.5 and [0, 1]
when p + d = 0 — and a Wilson score interval. Added: how many decided, on how many
scenarios, refusal and unparseable rates, and an interval for the mean. Everything is a few
`bincount`s over the transcript arrays.

Both intervals take the scenario as the unit (clustered.py): the mean's is a t interval of
its two-stage variance (scenario-clustered, with the finite population weighed in), the win
rate's is Wilson's at Kish's effective size under the same variance. With one sample per
scenario and an unknown or infinite population they are the ordinary t and Wilson intervals.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from valuerank.analysis.clustered import (
    TwoStage,
    cell_totals,
    effective_size,
    t_interval,
    two_stage,
)
from valuerank.analysis.data import CODES, REFUSED, UNPARSEABLE, AnalysisInput, FloatArray
from valuerank.analysis.intervals import LEVEL, interval_dict, wilson
from valuerank.analysis.output import Checked, rounded
from valuerank.analysis.sampling import between_weight_of, between_weights
from valuerank.analysis.warning import AnalysisWarning

CONTESTED_LIMIT = 5
SMALL_SAMPLE = 10
MODERATE_SAMPLE = 30


def _per_model_counts(data: AnalysisInput, weights: Any = None) -> FloatArray:
    m = len(data.models)
    return np.bincount(data.model_idx, weights=weights, minlength=m).astype(float)


WIN_RATE_METHOD = "wilson_score_scenario_clustered"
MEAN_METHOD = "t_scenario_clustered"


def method_name(base: str, corrected: bool) -> str:
    """`base`, with `_fpc` when the finite population lowered the between-scenario part."""
    return base + ("_fpc" if corrected else "")


def win_rate_method(data: AnalysisInput) -> str:
    """The run-level name: `_fpc` when the run is a sample or a full run of a known
    definition (each interval's own `method` says whether its figure could use it)."""
    return method_name(WIN_RATE_METHOD, between_weight_of(data.sample) < 1)


def mean_method(data: AnalysisInput) -> str:
    """The run-level name of the mean decision's interval (as `win_rate_method`)."""
    return method_name(MEAN_METHOD, between_weight_of(data.sample) < 1)


def _weights(data: AnalysisInput, counts: FloatArray) -> FloatArray:
    """Each figure's g: its basis is the scenarios it rests on (counts > 0 along the last
    axis), of the definition's."""
    return between_weights(data.sample, (counts > 0).sum(axis=-1))


def mean_decision_fit(data: AnalysisInput) -> TwoStage:
    """Each model's mean decision with its two-stage variance (scenarios as clusters)."""
    sums, counts, within = cell_totals(data.model_idx, data.scenario_idx, data.decision, data.shape)
    return two_stage(sums, counts, within, _weights(data, counts))


def win_rate_fit(data: AnalysisInput) -> TwoStage:
    """Each model × value win rate p / (p + d) with its two-stage variance, (models, values):
    per scenario, a = p, b = p + d and the within sum of squares of the 0/1 verdicts p·d/b."""
    m, s = data.shape
    v = len(data.values)
    rows, cols = np.nonzero(data.value_status * data.judged[:, None].astype(np.int8))
    # index (model, value, scenario) of every verdict, counted once per sign
    flat = (data.model_idx[rows] * v + cols) * s + data.scenario_idx[rows]
    up = data.value_status[rows, cols] > 0
    pri = np.bincount(flat[up], minlength=m * v * s).astype(float).reshape(m, v, s)
    dep = np.bincount(flat[~up], minlength=m * v * s).astype(float).reshape(m, v, s)
    both = pri + dep
    with np.errstate(invalid="ignore", divide="ignore"):
        within = np.where(both > 0, pri * dep / np.maximum(both, 1), 0.0)
    return two_stage(pri, both, within, _weights(data, both))


def value_counts(data: AnalysisInput) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(prioritised, deprioritised, neutral) counts, each (models, values)."""
    m = len(data.models)
    onehot = (data.model_idx[None, :] == np.arange(m)[:, None]).astype(float)
    status = data.value_status
    prioritized = onehot @ (status > 0).astype(float)
    deprioritized = onehot @ (status < 0).astype(float)
    judged = onehot @ data.judged.astype(float)
    neutral = judged[:, None] - prioritized - deprioritized
    return prioritized, deprioritized, neutral


def values_unavailable(data: AnalysisInput) -> dict[str, str]:
    """Why a model has no value figure at all (win rates, strengths), for the models of a
    judged run without a single prioritised or deprioritised value; refused transcripts
    carry none (data.py)."""
    if not data.values:
        return {}
    verdicts = np.bincount(
        data.model_idx, weights=np.abs(data.value_status).sum(axis=1), minlength=len(data.models)
    )
    size = _per_model_counts(data)
    refused = _per_model_counts(data, data.outcome == REFUSED)
    judged = _per_model_counts(data, data.judged)
    reasons: dict[str, str] = {}
    for i, model in enumerate(data.models):
        if verdicts[i] > 0:
            continue
        if refused[i] == size[i]:
            reasons[model] = (
                "it refused every transcript: a refusal takes no side, so no value was "
                "prioritised or deprioritised"
            )
        elif judged[i] == 0:
            reasons[model] = "none of its transcripts was judged"
        else:
            reasons[model] = "the judges named no value it prioritised or deprioritised"
    return reasons


def verdict_warnings(data: AnalysisInput) -> list[AnalysisWarning]:
    """NO_VALUE_VERDICTS for each model without value figures, with the reason."""
    return [
        AnalysisWarning(
            "NO_VALUE_VERDICTS",
            f"{model} has no value win rates or strengths: {reason}",
            "Its decisions are still analysed; value figures need decided, judged transcripts",
        )
        for model, reason in values_unavailable(data).items()
    ]


def per_model(data: AnalysisInput) -> dict[str, Any]:
    """The `perModel` section."""
    m = len(data.models)
    decided = data.decided
    d_idx = data.model_idx[decided]
    x = data.decision[decided]
    size = _per_model_counts(data)
    n_dec = np.bincount(d_idx, minlength=m).astype(float)
    sums = np.bincount(d_idx, weights=x, minlength=m)
    squares = np.bincount(d_idx, weights=x * x, minlength=m)
    lows = np.full(m, np.inf)
    highs = np.full(m, -np.inf)
    np.minimum.at(lows, d_idx, x)
    np.maximum.at(highs, d_idx, x)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / n_dec
        variances = np.maximum(squares - n_dec * means * means, 0.0) / (n_dec - 1)
    refused = _per_model_counts(data, data.outcome == REFUSED)
    unparseable = _per_model_counts(data, data.outcome == UNPARSEABLE)
    prioritized, deprioritized, neutral = value_counts(data)
    rates = win_rate_fit(data)
    lower, upper = wilson(prioritized, prioritized + deprioritized, effective=effective_size(rates))
    fit = mean_decision_fit(data)
    unavailable = values_unavailable(data)
    result: dict[str, Any] = {}
    for i, model in enumerate(data.models):
        k = int(n_dec[i])
        values = {}
        for j, value in enumerate(() if model in unavailable else data.values):
            p, d = int(prioritized[i, j]), int(deprioritized[i, j])
            values[value] = {
                "winRate": p / (p + d) if p + d else 0.5,
                "confidenceInterval": {
                    "lower": lower[i, j],
                    "upper": upper[i, j],
                    "level": LEVEL,
                    "method": method_name(WIN_RATE_METHOD, bool(rates.corrected[i, j])),
                    "scenarios": int(rates.scenarios[i, j]),
                },
                "count": {"prioritized": p, "deprioritized": d, "neutral": int(neutral[i, j])},
            }
        interval = (
            t_interval(float(fit.estimate[i]), float(fit.variance[i]), float(fit.df[i]))
            if k > 1
            else None
        )
        result[model] = {
            "sampleSize": int(size[i]),
            "overall": {
                "mean": means[i] if k else None,
                "stdDev": float(np.sqrt(variances[i])) if k > 1 else None,
                "min": lows[i] if k else None,
                "max": highs[i] if k else None,
                "confidenceInterval": interval_dict(
                    interval, method=method_name(MEAN_METHOD, bool(fit.corrected[i]))
                ),
            },
            "values": values,
            "valuesUnavailable": unavailable.get(model),
            "decided": k,
            "scenarios": int(fit.scenarios[i]),
            "refusals": int(refused[i]),
            "unparseable": int(unparseable[i]),
            "refusalRate": refused[i] / size[i] if size[i] else None,
            "unparseableRate": unparseable[i] / size[i] if size[i] else None,
        }
    return result


def visualization(data: AnalysisInput, cells: FloatArray) -> dict[str, Any]:
    """Decision counts 1–5 per model and the model × scenario matrix of mean decisions."""
    m = len(data.models)
    decided = data.decided
    codes = data.decision[decided].astype(np.intp) - int(CODES[0])
    counts = np.bincount(
        data.model_idx[decided] * len(CODES) + codes, minlength=m * len(CODES)
    ).reshape(m, len(CODES))
    distribution = {
        model: {str(int(c)): int(counts[i, k]) for k, c in enumerate(CODES)}
        for i, model in enumerate(data.models)
    }
    matrix = Checked()
    present = ~np.isnan(cells)
    values = rounded(cells)
    for i, model in enumerate(data.models):
        row = values[i]
        matrix[model] = {data.scenarios[j]: row[j] for j in np.flatnonzero(present[i]).tolist()}
    return {"decisionDistribution": distribution, "modelScenarioMatrix": matrix}


def contested(
    data: AnalysisInput, cells: FloatArray, limit: int = CONTESTED_LIMIT
) -> list[dict[str, Any]]:
    """Scenarios whose decided transcripts disagree most: population variance (ddof=0) over
    all of a scenario's decided transcripts (every model, every sample), at least two."""
    s = len(data.scenarios)
    decided = data.decided
    idx = data.scenario_idx[decided]
    x = data.decision[decided]
    counts = np.bincount(idx, minlength=s)
    sums = np.bincount(idx, weights=x, minlength=s)
    squares = np.bincount(idx, weights=x * x, minlength=s)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / counts
        variance = np.maximum(squares / counts - means * means, 0.0)
    eligible = np.flatnonzero(counts >= 2)
    order = eligible[np.lexsort((eligible, -variance[eligible]))][:limit]
    return [
        {
            "scenarioId": data.scenarios[j],
            "scenarioName": data.scenario_names[j],
            "variance": float(variance[j]),
            "transcripts": int(counts[j]),
            "modelScores": {
                data.models[i]: float(cells[i, j])
                for i in range(len(data.models))
                if not np.isnan(cells[i, j])
            },
        }
        for j in order.tolist()
    ]


def sample_warnings(data: AnalysisInput, profile: dict[str, Any]) -> list[AnalysisWarning]:
    """SMALL_SAMPLE (< 10) / MODERATE_SAMPLE (< 30) decided transcripts; NO_DECISIONS."""
    found = []
    for model, stats in profile.items():
        k = stats["decided"]
        if k == 0:
            reason = "refused" if stats["refusals"] == stats["sampleSize"] else "gave no decision"
            found.append(
                AnalysisWarning(
                    "NO_DECISIONS",
                    f"Model {model} {reason} in all {stats['sampleSize']} transcripts",
                    "Its decision statistics are null; see refusalRate and unparseableRate",
                )
            )
        elif k < SMALL_SAMPLE:
            found.append(
                AnalysisWarning(
                    "SMALL_SAMPLE",
                    f"Model {model} has only {k} decided transcripts",
                    "Results may have wide confidence intervals",
                )
            )
        elif k < MODERATE_SAMPLE:
            found.append(
                AnalysisWarning(
                    "MODERATE_SAMPLE",
                    f"Model {model} has {k} decided transcripts",
                    "Read the confidence intervals, not only the point estimates",
                )
            )
        if k > 1 and stats["overall"]["stdDev"] == 0:
            found.append(
                AnalysisWarning(
                    "CONSTANT_DECISIONS",
                    f"Model {model} gave the same decision ({stats['overall']['mean']:g}) "
                    "every time",
                    "Correlations with this model are undefined and reported as null",
                )
            )
    return found
