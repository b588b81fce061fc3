"""Bradley–Terry strengths against a logistic-regression MLE (statsmodels)."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm

from valuerank.analysis.values import bradley_terry

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
