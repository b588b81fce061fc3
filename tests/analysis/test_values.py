"""Bradley–Terry strengths against a logistic-regression MLE (statsmodels), their intervals
against statsmodels' cluster-robust GLM, separation reported as such, and the coverage of
the intervals on simulated runs whose samples repeat a scenario's comparison."""

from __future__ import annotations

import math

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats

from valuerank.analysis.sampling import SampleBasis
from valuerank.analysis.values import bradley_terry

from .helpers import run_of

VALUES = ["Care", "Fairness", "Honesty", "Loyalty"]
TRUTH = np.array([1.0, 0.3, 0.0, -1.2])
Comparison = tuple[list[str], list[str]]


def _comparisons(rng: np.random.Generator, n: int) -> list[Comparison]:
    found = []
    for _ in range(n):
        a, b = rng.choice(4, size=2, replace=False)
        p = 1 / (1 + np.exp(TRUTH[b] - TRUTH[a]))
        winner, loser = (a, b) if rng.random() < p else (b, a)
        found.append(([VALUES[winner]], [VALUES[loser]]))
    return found


def _design(comparisons: list[Comparison], names: list[str]) -> np.ndarray:
    """+1 for the winner, −1 for the loser: the Bradley–Terry model as a logistic GLM."""
    design = np.zeros((len(comparisons), len(names)))
    for k, (won, lost) in enumerate(comparisons):
        design[k, names.index(won[0])] = 1
        design[k, names.index(lost[0])] = -1
    return design


def _glm_reference(
    comparisons: list[Comparison], groups: np.ndarray, names: list[str] = VALUES
) -> tuple[np.ndarray, np.ndarray]:
    """(centred strengths, their standard errors) from statsmodels' binomial GLM with the
    first value fixed at 0 and the CRV1 cluster-robust covariance over `groups`."""
    design = _design(comparisons, names)
    glm = sm.GLM(np.ones(len(comparisons)), design[:, 1:], family=sm.families.Binomial())
    fit = glm.fit(cov_type="cluster", cov_kwds={"groups": groups})
    k = len(names)
    embed = np.vstack([np.zeros(k - 1), np.eye(k - 1)])
    centre = np.eye(k) - 1 / k
    covariance = centre @ embed @ fit.cov_params() @ embed.T @ centre
    return centre @ embed @ fit.params, np.sqrt(np.diag(covariance))


def test_strengths_are_the_bradley_terry_mle() -> None:
    comparisons = _comparisons(np.random.default_rng(21), 400)
    data = run_of([("m:a", f"s{k}", 3) for k in range(400)], values=comparisons)
    result, warnings = bradley_terry(data)
    assert not warnings
    fit = result["m:a"]
    assert fit["regularised"] is False and fit["comparisons"] == 400
    assert fit["identified"] == 4 and fit["separatedValues"] == 0
    logit = sm.Logit(np.ones(400), _design(comparisons, VALUES)[:, 1:]).fit(disp=0)
    ref = np.concatenate([[0.0], logit.params])
    ref -= ref.mean()
    ours = np.array([fit["values"][v]["strength"] for v in VALUES])
    np.testing.assert_allclose(ours, ref, atol=1e-6)
    assert ours[0] > ours[-1]  # Care beats Loyalty, as generated


@pytest.mark.parametrize("sample", [None, SampleBasis(25, 120, 480)], ids=["full", "sampled"])
def test_intervals_are_cluster_robust_over_scenarios(sample: SampleBasis | None) -> None:
    """Two samples per scenario: the interval is the estimate ± z·se with statsmodels'
    CRV1 standard error clustered by scenario, for a sampled run too (no finite-population
    correction: the scenarios count as a sample of an unbounded population)."""
    scenarios = 120
    comparisons = _comparisons(np.random.default_rng(33), 2 * scenarios)
    rows = [("m:a", f"s{k // 2:03d}", 3) for k in range(2 * scenarios)]
    result, _ = bradley_terry(run_of(rows, values=comparisons, sample=sample))
    fit = result["m:a"]
    assert fit["scenarios"] == scenarios
    estimate, se = _glm_reference(comparisons, np.arange(2 * scenarios) // 2)
    z = stats.norm.ppf(0.975)
    for k, value in enumerate(VALUES):
        entry = fit["values"][value]
        assert entry["strength"] == pytest.approx(estimate[k], abs=1e-6)
        assert entry["standardError"] == pytest.approx(se[k], rel=1e-5)
        assert entry["lower"] == pytest.approx(estimate[k] - z * se[k], abs=1e-5)
        assert entry["upper"] == pytest.approx(estimate[k] + z * se[k], abs=1e-5)
        assert entry["upper"] - entry["lower"] > 0.1


@pytest.mark.parametrize(("percentage", "sampled"), [(50, 100), (90, 180)], ids=["50%", "90%"])
def test_expanding_a_run_to_every_scenario_does_not_widen_the_intervals(
    percentage: int, sampled: int
) -> None:
    """A sample of `sampled` of 200 scenarios (two samples each), then the same run expanded:
    the same judgments plus the rest of the scenarios, which repeat the first ones'
    judgments. More of the same evidence narrows every interval and none has zero width
    (scaling the sample's standard errors by fpc made the 90 % sample's 3× narrower than
    its expansion's)."""
    total = 200
    base = _comparisons(np.random.default_rng(41), 2 * sampled)
    rest = base[: 2 * (total - sampled)]
    rows = [("m:a", f"s{k // 2:03d}", 3) for k in range(2 * total)]
    part, _ = bradley_terry(
        run_of(rows[: 2 * sampled], values=base, sample=SampleBasis(percentage, sampled, total))
    )
    full, _ = bradley_terry(run_of(rows, values=base + rest, sample=SampleBasis(100, total, total)))
    assert full["m:a"]["scenarios"] == total
    for value in VALUES:
        before, after = part["m:a"]["values"][value], full["m:a"]["values"][value]
        width = after["upper"] - after["lower"]
        assert 0 < width < before["upper"] - before["lower"]


def test_a_value_that_never_loses_is_separated_not_regularised() -> None:
    """Care beats everyone and never loses: its MLE is infinite. It is reported as separated
    above; the others keep the MLE of their own comparisons (no regularisation in them)."""
    core = [(["Fairness"], ["Honesty"])] * 3 + [(["Honesty"], ["Fairness"])] * 2
    core += (
        [(["Honesty"], ["Loyalty"])] * 3
        + [(["Loyalty"], ["Honesty"])]
        + [
            (["Loyalty"], ["Fairness"]),
            (["Fairness"], ["Loyalty"]),
        ]
    )
    care = [(["Care"], ["Loyalty"])] * 5 + [(["Care"], ["Honesty"])] * 3
    comparisons = core + care
    rows = [("m:a", f"s{k}", 3) for k in range(len(comparisons))]
    result, warnings = bradley_terry(run_of(rows, values=comparisons))
    fit = result["m:a"]
    assert fit["identified"] == 3 and fit["separatedValues"] == 1
    entry = fit["values"]["Care"]
    assert entry == {
        "strength": None,
        "lower": None,
        "upper": None,
        "standardError": None,
        "separated": True,
        "direction": "above",
        "wins": 8,
        "losses": 0,
    }
    names = ["Fairness", "Honesty", "Loyalty"]
    estimate, se = _glm_reference(core, np.arange(len(core)), names)
    for k, name in enumerate(names):
        assert fit["values"][name]["separated"] is False
        assert fit["values"][name]["strength"] == pytest.approx(estimate[k], abs=1e-6)
        assert fit["values"][name]["standardError"] == pytest.approx(se[k], rel=1e-5)
    assert [w.code for w in warnings] == ["BRADLEY_TERRY_SEPARATION"]
    assert "Care (above)" in warnings[0].message


def test_never_winning_and_disconnected_values_have_their_side() -> None:
    comparisons = [(["Care"], ["Honesty"]), (["Honesty"], ["Care"])] * 2
    comparisons += [(["Care"], ["Loyalty"])] * 2  # Loyalty never wins: below
    comparisons += [(["Fairness"], ["Purity"])] * 2  # no link to the others: unordered
    rows = [("m:a", f"s{k}", 3) for k in range(len(comparisons))]
    result, _ = bradley_terry(run_of(rows, values=comparisons))
    values = result["m:a"]["values"]
    assert {v: (e["separated"], e["direction"]) for v, e in values.items()} == {
        "Care": (False, None),
        "Honesty": (False, None),
        "Loyalty": (True, "below"),
        "Fairness": (True, None),
        "Purity": (True, None),
    }
    assert values["Care"]["strength"] == pytest.approx(0.0, abs=1e-9)  # two wins each way


def test_a_ranking_without_reversals_identifies_nothing() -> None:
    comparisons = [(["Care"], ["Honesty"])] * 3 + [(["Honesty"], ["Loyalty"])] * 3
    rows = [("m:a", f"s{k}", 3) for k in range(6)]
    result, warnings = bradley_terry(run_of(rows, values=comparisons))
    values = result["m:a"]["values"]
    assert all(e["strength"] is None and e["upper"] is None for e in values.values())
    assert [values[v]["direction"] for v in ("Care", "Honesty", "Loyalty")] == [
        "above",
        None,
        "below",
    ]
    assert [w.code for w in warnings] == ["BRADLEY_TERRY_SEPARATION"]


def test_one_scenario_gives_strengths_without_intervals() -> None:
    comparisons = [(["Care"], ["Honesty"])] * 2 + [(["Honesty"], ["Care"])]
    result, warnings = bradley_terry(run_of([("m:a", "s1", 3)] * 3, values=comparisons))
    care = result["m:a"]["values"]["Care"]
    assert care["strength"] == pytest.approx(math.log(2) / 2)
    assert care["lower"] is None and care["upper"] is None
    assert [w.code for w in warnings] == ["BRADLEY_TERRY_NO_INTERVAL"]
    # Two scenarios, each balanced on its own: no spread between scenarios, no interval
    # (a zero-width one would claim certainty).
    balanced = [(["Care"], ["Honesty"]), (["Honesty"], ["Care"])] * 2
    rows = [("m:a", f"s{k // 2}", 3) for k in range(4)]
    result, warnings = bradley_terry(run_of(rows, values=balanced))
    care = result["m:a"]["values"]["Care"]
    assert care["strength"] == pytest.approx(0.0, abs=1e-9) and care["lower"] is None
    assert [w.code for w in warnings] == ["BRADLEY_TERRY_NO_INTERVAL"]


def test_no_comparisons_no_strengths() -> None:
    data = run_of([("m:a", "s1", 3)], values=[(["Care"], [])])
    result, _ = bradley_terry(data)
    assert result == {"m:a": None}
    unjudged = run_of([("m:a", "s1", 3)])
    assert bradley_terry(unjudged) == ({}, [])


def _clustered_run(rng: np.random.Generator, scenarios: int, samples: int) -> list[Comparison]:
    """Each scenario draws one pair and one outcome, and its samples all repeat it: the
    samples of a scenario are one observation, not `samples` of them."""
    found: list[Comparison] = []
    for _ in range(scenarios):
        found += _comparisons(rng, 1) * samples
    return found


def test_intervals_cover_the_true_strengths_when_samples_repeat_a_scenario() -> None:
    """Known strengths recovered: over 200 simulated runs the 95 % intervals cover the true
    centred strengths about 95 % of the time, although every scenario's three samples are
    identical (intervals that counted them as independent would cover ~76 %)."""
    rng = np.random.default_rng(8)
    truth = TRUTH - TRUTH.mean()
    covered, total, estimates = 0, 0, []
    for _ in range(200):
        comparisons = _clustered_run(rng, 150, 3)
        rows = [("m:a", f"s{k // 3:03d}", 3) for k in range(len(comparisons))]
        result, _ = bradley_terry(run_of(rows, values=comparisons))
        fit = result["m:a"]
        if fit["separatedValues"]:
            continue
        for k, value in enumerate(VALUES):
            entry = fit["values"][value]
            covered += entry["lower"] <= truth[k] <= entry["upper"]
            total += 1
        estimates.append([fit["values"][v]["strength"] for v in VALUES])
    assert total >= 190 * 4
    assert 0.92 <= covered / total <= 0.98
    np.testing.assert_allclose(np.mean(estimates, axis=0), truth, atol=0.06)
