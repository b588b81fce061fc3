"""Bradley–Terry strengths of values per model, with bootstrap intervals (choix).

Each judged transcript where the consensus prioritised value A and deprioritised value B is
one "A beats B" comparison (every prioritised × deprioritised pair). The strengths are the
maximum-likelihood Bradley–Terry parameters (log scale, mean 0) fitted by choix's iterative
Luce spectral ranking. When the comparison graph is not strongly connected (a value that
never loses has an infinite MLE) a small regularisation (α = 0.01 virtual comparisons) keeps
the estimate finite, and the result says so. Intervals are percentile bootstrap intervals
over the model's scenarios — the sampling unit: a scenario's transcripts (several samples)
are resampled together, with replacement, and the fit repeated. For a sampled run each
draw's deviation from the estimate is multiplied by the finite-population correction
before the percentiles are taken (the bootstrap standard error times fpc).
"""

from __future__ import annotations

from typing import Any

import choix
import numpy as np
from scipy.sparse.csgraph import connected_components

from valuerank.analysis.data import AnalysisInput, FloatArray
from valuerank.analysis.intervals import fpc_scaled, percentile_interval
from valuerank.analysis.output import AnalysisWarning

REGULARISATION = 0.01
BOOTSTRAP = 200
SEED = 20240611


def comparison_tensor(status: Any) -> FloatArray:
    """(transcripts, values, values): entry [t, a, b] = 1 when transcript t prioritised a
    and deprioritised b."""
    winners = (status > 0).astype(float)
    losers = (status < 0).astype(float)
    tensor: FloatArray = np.einsum("ta,tb->tab", winners, losers)
    return tensor


def strongly_connected(comparisons: FloatArray) -> bool:
    count, _ = connected_components(comparisons > 0, directed=True, connection="strong")
    return bool(count == 1)


def fit(comparisons: FloatArray) -> tuple[FloatArray | None, bool]:
    """(strengths, regularised) of a win-count matrix; None when the fit fails."""
    regularised = not strongly_connected(comparisons)
    try:
        params = choix.ilsr_pairwise_dense(
            comparisons, alpha=REGULARISATION if regularised else 0.0, max_iter=500
        )
    except (RuntimeError, ValueError, FloatingPointError):
        return None, regularised
    if not np.all(np.isfinite(params)):
        return None, regularised
    return params - params.mean(), regularised


def per_scenario(scenario_idx: Any, per_transcript: FloatArray) -> FloatArray:
    """Win matrices summed per scenario: (scenarios present, values, values)."""
    order = np.argsort(scenario_idx, kind="stable")
    ordered = scenario_idx[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    summed: FloatArray = np.add.reduceat(per_transcript[order], starts, axis=0)
    return summed


def bradley_terry(
    data: AnalysisInput, *, bootstrap: int = BOOTSTRAP, seed: int = SEED
) -> tuple[dict[str, Any], list[AnalysisWarning]]:
    """Per model: each value's strength and 95 % bootstrap interval (None when the model
    has no comparison between two values)."""
    warnings: list[AnalysisWarning] = []
    result: dict[str, Any] = {}
    if not data.values:
        return result, warnings
    fpc = None if data.sample is None else data.sample.fpc
    rng = np.random.default_rng(seed)
    tensor = comparison_tensor(data.value_status)
    for i, model in enumerate(data.models):
        rows = np.flatnonzero((data.model_idx == i) & data.judged)
        per_transcript = tensor[rows]
        total = per_transcript.sum(axis=0)
        involved = np.flatnonzero((total.sum(axis=0) + total.sum(axis=1)) > 0)
        if involved.size < 2:
            result[model] = None
            continue
        sub = per_scenario(data.scenario_idx[rows], per_transcript[:, involved][:, :, involved])
        strengths, regularised = fit(total[np.ix_(involved, involved)])
        if strengths is None:
            result[model] = None
            continue
        k = sub.shape[0]
        draws = rng.multinomial(k, np.full(k, 1 / k), size=bootstrap)
        boot_mats = np.tensordot(draws.astype(float), sub, axes=(1, 0))
        fitted = [fit(mat)[0] for mat in boot_mats]
        good = np.array([f for f in fitted if f is not None])
        bounds = percentile_interval(fpc_scaled(good, strengths, fpc)) if len(good) else None
        if regularised:
            warnings.append(
                AnalysisWarning(
                    "BRADLEY_TERRY_REGULARISED",
                    f"Some values of {model} never lost (or never won) a comparison",
                    "Their strengths are regularised estimates: read the intervals",
                )
            )
        result[model] = {
            "comparisons": int(total.sum()),
            "scenarios": k,
            "regularised": regularised,
            "bootstrapDraws": len(good),
            "values": {
                data.values[v]: {
                    "strength": float(strengths[n]),
                    "lower": None if bounds is None else float(bounds[0][n]),
                    "upper": None if bounds is None else float(bounds[1][n]),
                }
                for n, v in enumerate(involved.tolist())
            },
        }
    return result, warnings
