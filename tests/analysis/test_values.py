"""Bradley–Terry strengths against a logistic-regression MLE (statsmodels), and their
bootstrap intervals against a loop written here."""

from __future__ import annotations

import math

import numpy as np
import pytest
import statsmodels.api as sm

from valuerank.analysis.sampling import SampleBasis
from valuerank.analysis.values import SEED, bradley_terry

from .helpers import run_of

VALUES = ["Care", "Fairness", "Honesty", "Loyalty"]


def _comparisons(rng: np.random.Generator, n: int) -> list[tuple[list[str], list[str]]]:
    truth = np.array([1.0, 0.3, 0.0, -1.2])
    found = []
    for _ in range(n):
        a, b = rng.choice(4, size=2, replace=False)
        p = 1 / (1 + np.exp(truth[b] - truth[a]))
        winner, loser = (a, b) if rng.random() < p else (b, a)
        found.append(([VALUES[winner]], [VALUES[loser]]))
    return found


def test_strengths_are_the_bradley_terry_mle() -> None:
    rng = np.random.default_rng(21)
    comparisons = _comparisons(rng, 400)
    rows = [("m:a", f"s{k}", 3) for k in range(len(comparisons))]
    data = run_of(rows, values=comparisons)
    result, warnings = bradley_terry(data, bootstrap=60)
    assert not warnings
    fit = result["m:a"]
    assert fit["regularised"] is False and fit["comparisons"] == 400
    # Reference: logistic regression without intercept, +1 for the winner, -1 for the loser.
    design = np.zeros((len(comparisons), len(VALUES)))
    for k, (won, lost) in enumerate(comparisons):
        design[k, VALUES.index(won[0])] = 1
        design[k, VALUES.index(lost[0])] = -1
    logit = sm.Logit(np.ones(len(comparisons)), design[:, 1:]).fit(disp=0)  # Care fixed at 0
    ref = np.concatenate([[0.0], logit.params])
    ref -= ref.mean()
    ours = np.array([fit["values"][v]["strength"] for v in VALUES])
    np.testing.assert_allclose(ours, ref, atol=1e-5)
    for v in VALUES:
        entry = fit["values"][v]
        assert entry["lower"] <= entry["strength"] <= entry["upper"]
    assert ours[0] > ours[-1]  # Care beats Loyalty, as generated


def test_a_value_that_never_loses_is_regularised_and_finite() -> None:
    comparisons = [(["Care"], ["Loyalty"])] * 5 + [(["Honesty"], ["Loyalty"])] * 3
    data = run_of([("m:a", f"s{k}", 3) for k in range(8)], values=comparisons)
    result, warnings = bradley_terry(data, bootstrap=20)
    assert result["m:a"]["regularised"] is True
    assert all(np.isfinite(e["strength"]) for e in result["m:a"]["values"].values())
    assert [w.code for w in warnings] == ["BRADLEY_TERRY_REGULARISED"]


def test_no_comparisons_no_strengths() -> None:
    data = run_of([("m:a", "s1", 3)], values=[(["Care"], [])])
    result, _ = bradley_terry(data)
    assert result == {"m:a": None}
    unjudged = run_of([("m:a", "s1", 3)])
    assert bradley_terry(unjudged) == ({}, [])


@pytest.mark.parametrize("seed", [1, 2])
def test_bootstrap_is_reproducible(seed: int) -> None:
    comparisons = _comparisons(np.random.default_rng(seed), 60)
    data = run_of([("m:a", f"s{k}", 3) for k in range(60)], values=comparisons)
    assert bradley_terry(data, bootstrap=30) == bradley_terry(data, bootstrap=30)


def _glm_strengths(design: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The Bradley–Terry MLE as a binomial GLM without intercept (Care fixed at 0, then
    centred): one row per comparison, +1 for the winner, -1 for the loser."""
    keep = weights > 0
    fit = sm.GLM(
        np.ones(int(keep.sum())),
        design[keep][:, 1:],
        family=sm.families.Binomial(),
        freq_weights=weights[keep],
    ).fit()
    full = np.concatenate([[0.0], fit.params])
    return full - full.mean()


@pytest.mark.parametrize("sample", [None, SampleBasis(25, 120, 480)], ids=["full", "sampled"])
def test_bootstrap_intervals_match_a_loop_over_scenarios(sample: SampleBasis | None) -> None:
    """The intervals are percentiles of refits on scenarios drawn with replacement (a
    scenario's two samples together), with the draws' deviations times the correction for
    a sampled run — recomputed here with a loop, the same seed and statsmodels' GLM."""
    rng = np.random.default_rng(33)
    scenarios = 120
    comparisons = _comparisons(rng, 2 * scenarios)
    rows = [("m:a", f"s{k // 2:03d}", 3) for k in range(2 * scenarios)]  # two samples each
    data = run_of(rows, values=comparisons, sample=sample)
    draws = 80
    result, _ = bradley_terry(data, bootstrap=draws)
    fit = result["m:a"]
    assert fit["scenarios"] == scenarios and fit["bootstrapDraws"] == draws
    design = np.zeros((len(comparisons), len(VALUES)))
    for k, (won, lost) in enumerate(comparisons):
        design[k, VALUES.index(won[0])] = 1
        design[k, VALUES.index(lost[0])] = -1
    scenario_of_row = np.arange(len(comparisons)) // 2
    estimate = _glm_strengths(design, np.ones(len(comparisons)))
    loop_rng = np.random.default_rng(SEED)
    boot = []
    for _ in range(draws):
        counts = loop_rng.multinomial(scenarios, np.full(scenarios, 1 / scenarios))
        boot.append(_glm_strengths(design, counts[scenario_of_row].astype(float)))
    fpc = 1.0 if sample is None else math.sqrt((480 - 120) / (480 - 1))
    scaled = estimate + fpc * (np.array(boot) - estimate)
    lower = np.percentile(scaled, 2.5, axis=0)
    upper = np.percentile(scaled, 97.5, axis=0)
    for k, value in enumerate(VALUES):
        entry = fit["values"][value]
        assert entry["strength"] == pytest.approx(estimate[k], abs=1e-5)
        assert entry["lower"] == pytest.approx(lower[k], abs=1e-4)
        assert entry["upper"] == pytest.approx(upper[k], abs=1e-4)
