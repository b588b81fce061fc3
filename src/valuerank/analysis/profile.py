"""Per-model value profiles: decisions, refusals, value win rates, contested scenarios.

`perModel[model]` keeps the original cloud worker's keys: `sampleSize` (all transcripts),
`overall{mean, stdDev (ddof=1), min, max}` over the decided ones, and `values[v]{winRate,
confidenceInterval, count}` with winRate = p / (p + d) — neutral excluded; 0.5 and [0, 1]
when p + d = 0 — and a Wilson score interval. Added: how many decided, refusal and
unparseable rates, and an interval for the mean. Everything is a few `bincount`s over the
transcript arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from valuerank.analysis.data import CODES, REFUSED, UNPARSEABLE, AnalysisInput, FloatArray
from valuerank.analysis.intervals import LEVEL, interval_dict, mean_interval, wilson
from valuerank.analysis.output import AnalysisWarning, Checked, rounded

CONTESTED_LIMIT = 5
SMALL_SAMPLE = 10
MODERATE_SAMPLE = 30


def _per_model_counts(data: AnalysisInput, weights: Any = None) -> FloatArray:
    m = len(data.models)
    return np.bincount(data.model_idx, weights=weights, minlength=m).astype(float)


def win_rate_method(data: AnalysisInput) -> str:
    return "wilson_score_fpc" if _fpc(data) is not None else "wilson_score"


def _fpc(data: AnalysisInput) -> float | None:
    return None if data.sample is None else data.sample.fpc


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
    fpc = _fpc(data)
    lower, upper = wilson(prioritized, prioritized + deprioritized, fpc=fpc)
    method = win_rate_method(data)
    result: dict[str, Any] = {}
    for i, model in enumerate(data.models):
        k = int(n_dec[i])
        values = {}
        for j, value in enumerate(data.values):
            p, d = int(prioritized[i, j]), int(deprioritized[i, j])
            values[value] = {
                "winRate": p / (p + d) if p + d else 0.5,
                "confidenceInterval": {
                    "lower": lower[i, j],
                    "upper": upper[i, j],
                    "level": LEVEL,
                    "method": method,
                },
                "count": {"prioritized": p, "deprioritized": d, "neutral": int(neutral[i, j])},
            }
        interval = mean_interval(x[d_idx == i], fpc=fpc) if k > 1 else None
        result[model] = {
            "sampleSize": int(size[i]),
            "overall": {
                "mean": means[i] if k else None,
                "stdDev": float(np.sqrt(variances[i])) if k > 1 else None,
                "min": lows[i] if k else None,
                "max": highs[i] if k else None,
                "confidenceInterval": interval_dict(
                    interval, method="t_fpc" if fpc is not None else "t"
                ),
            },
            "values": values,
            "decided": k,
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
