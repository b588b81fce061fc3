"""Robustness to the scale's order and the phrasing, consistency, and the ranking's
uncertainty (analysis/robustness.py, ranking.py), on simulated runs with known biases."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from scipy import stats

from valuerank.analysis.basic import analyze_basic
from valuerank.analysis.data import AnalysisInput
from valuerank.analysis.ranking import sensitivity_ranking, win_rate_ranking
from valuerank.analysis.robustness import (
    NO_ORDERS,
    NO_PHRASINGS,
    NO_REPEATS,
    consistency,
    robustness,
)
from valuerank.analysis.sensitivity import value_sensitivity
from valuerank.analysis.synthetic import RecoverySpec, recovery_run
from valuerank.analysis.synthetic_presentation import (
    PresentationSpec,
    presentation_run,
    true_effects,
)


def _codes(data: AnalysisInput) -> set[str]:
    return {w.code for w in robustness(data)[1]}


def test_a_known_order_effect_is_recovered_and_matches_a_paired_t_test() -> None:
    spec = PresentationSpec(scenarios=60, samples=2, position_bias=0.4, seed=5)
    data = presentation_run(spec)
    effect = robustness(data)[0]["model-0"]["orderEffect"]
    truth, _ = true_effects(spec)
    assert 0.7 < truth < 0.8  # 2b = 0.8 less a little clipping
    assert effect["ci95"][0] <= truth <= effect["ci95"][1]
    assert effect["n"] == 60
    # Independently: scipy's paired t-test over the scenarios' mean decisions per order.
    written = np.array([data.decision[(data.scenario_idx == j) & (data.orders == 0)].mean()
                        for j in range(60)])  # fmt: skip
    turned = np.array([data.decision[(data.scenario_idx == j) & (data.orders == 1)].mean()
                       for j in range(60)])  # fmt: skip
    test = stats.ttest_rel(written, turned)
    assert effect["value"] == pytest.approx(float((written - turned).mean()))
    assert effect["pValue"] == pytest.approx(test.pvalue)
    assert effect["ci95"] == pytest.approx(list(test.confidence_interval()))
    assert "ORDER_BIAS" in _codes(data)


def test_without_a_bias_the_order_interval_contains_zero_and_nothing_is_flagged() -> None:
    data = presentation_run(PresentationSpec(scenarios=40, samples=2, seed=2))
    effect = robustness(data)[0]["model-0"]["orderEffect"]
    assert effect["ci95"][0] <= 0 <= effect["ci95"][1]
    assert not _codes(data) & {"ORDER_BIAS", "WORDING_SENSITIVE"}


def test_a_known_phrasing_shift_is_recovered() -> None:
    spec = PresentationSpec(scenarios=60, phrasings=2, wording_bias=0.5, seed=7)
    data = presentation_run(spec)
    phrasing = robustness(data)[0]["model-0"]["phrasingEffect"]
    _, truth = true_effects(spec)
    assert phrasing["shift"]["ci95"][0] <= truth <= phrasing["shift"]["ci95"][1]
    assert phrasing["largestDifference"]["value"] > 0
    assert phrasing["largestDifference"]["ci95"][0] <= phrasing["largestDifference"]["value"]
    assert "WORDING_SENSITIVE" in _codes(data)


def test_the_phrasing_share_is_large_when_wording_dominates_and_near_zero_without() -> None:
    strong = presentation_run(
        PresentationSpec(scenarios=40, phrasings=2, samples=2, wording_bias=2.0, noise=0.3)
    )
    share = robustness(strong)[0]["model-0"]["phrasingEffect"]["varianceShare"]
    assert share["value"] > 0.7 and share["ci95"][0] > 0.5
    none = presentation_run(PresentationSpec(scenarios=40, phrasings=2, samples=2, seed=5))
    share = robustness(none)[0]["model-0"]["phrasingEffect"]["varianceShare"]
    assert abs(share["value"]) < 0.1 and share["pValue"] > 0.05


def test_the_phrasing_share_p_value_is_the_nested_f_test() -> None:
    data = presentation_run(
        PresentationSpec(scenarios=15, phrasings=3, samples=2, wording_bias=0.3, seed=8)
    )
    share = robustness(data)[0]["model-0"]["phrasingEffect"]["varianceShare"]
    frame = pd.DataFrame(
        {
            "y": data.decision,
            "s": data.scenario_idx.astype(str),
            "p": data.phrasing_idx.astype(str),
        }
    )
    nested = smf.ols("y ~ C(s) + C(s):C(p)", frame).fit()
    scenario_only = smf.ols("y ~ C(s)", frame).fit()
    _, p, _ = nested.compare_f_test(scenario_only)
    assert share["pValue"] == pytest.approx(p)
    within = scenario_only.ssr / scenario_only.df_resid
    assert share["value"] == pytest.approx(1 - (nested.ssr / nested.df_resid) / within)


def test_a_run_asked_one_way_has_no_order_or_phrasing_effect_and_says_why() -> None:
    data = recovery_run(RecoverySpec(scenarios=20, samples=3))
    entry = robustness(data)[0]["model-0"]
    assert entry["orderEffect"] is None and entry["phrasingEffect"] is None
    assert entry["reasons"] == {"orderEffect": NO_ORDERS, "phrasingEffect": NO_PHRASINGS}
    assert entry["consistency"]["scenarios"] == 20  # its samples are repeats
    once = recovery_run(RecoverySpec(scenarios=20, samples=1))
    assert robustness(once)[0]["model-0"]["reasons"]["consistency"] == NO_REPEATS


def test_consistency_entropy_and_the_most_inconsistent_scenarios() -> None:
    data = AnalysisInput.build(
        models=["m"] * 7,
        scenario_ids=["a", "a", "a", "b", "b", "c", "c"],
        decisions=[3, 3, 4, 1, 5, 2, 2],
        reasons=[None] * 7,
        scenarios={},
    )
    found, why = consistency(data, data.model_idx == 0)
    assert why is None and found is not None
    assert found["agreeing"] == 2 and found["scenarios"] == 3
    assert found["value"] == pytest.approx(2 / 3)
    entropy = found["entropy"]["perScenario"]
    assert entropy["a"] == pytest.approx(stats.entropy([2, 1], base=2))
    assert entropy["b"] == pytest.approx(1.0) and entropy["c"] == 0.0
    assert [s["scenarioId"] for s in found["mostInconsistent"]] == ["b"]
    assert found["mostInconsistent"][0]["spread"] == 4


def _judged(win_a: float, scenarios: int = 30, seed: int = 0) -> AnalysisInput:
    """Each transcript prioritises one of A/B/C over another: A wins `win_a` of its pairs."""
    rng = np.random.default_rng(seed)
    pri, dep, ids = [], [], []
    for j in range(scenarios):
        for _ in range(3):
            a_wins = rng.random() < win_a
            other = "B" if rng.random() < 0.5 else "C"
            pair = ("A", other) if a_wins else (other, "A")
            if rng.random() < 0.3:
                pair = ("B", "C") if rng.random() < 0.5 else ("C", "B")
            pri.append([pair[0]])
            dep.append([pair[1]])
            ids.append(f"s{j}")
    n = len(ids)
    return AnalysisInput.build(
        models=["m"] * n,
        scenario_ids=ids,
        decisions=[3] * n,
        reasons=[None] * n,
        scenarios={},
        prioritized=pri,
        deprioritized=dep,
        judged=[True] * n,
    )


def test_a_dominant_value_ranks_first_with_certainty() -> None:
    ranked = win_rate_ranking(_judged(1.0), 0)
    assert ranked is not None
    first = ranked["values"][0]
    assert first["value"] == "A" and first["rank"] == 1 and first["ci95"] == [1, 1]
    assert ranked["pAbove"]["A"]["B"] == 1.0 and ranked["pAbove"]["B"]["A"] == 0.0
    assert ranked["replicates"] == 1000
    # P(A above B) + P(B above A) = 1 for every pair; repeatable (seeded).
    even = win_rate_ranking(_judged(0.5, seed=3), 0)
    assert even is not None
    for a, row in even["pAbove"].items():
        for b, p in row.items():
            assert p + even["pAbove"][b][a] == pytest.approx(1.0)
    assert even == win_rate_ranking(_judged(0.5, seed=3), 0)


def test_the_sensitivity_ranking_orders_values_by_the_size_of_their_effect() -> None:
    data = presentation_run(PresentationSpec(scenarios=50, effects=(1.2, -0.1, 0.0), seed=9))
    ranked = sensitivity_ranking(data, 0)
    assert ranked is not None
    first = ranked["values"][0]
    assert first["value"] == "Dim1" and first["ci95"] == [1, 1]
    assert ranked["pAbove"]["Dim1"]["Dim2"] == 1.0
    assert {v["value"] for v in ranked["values"][1:]} == {"Dim2", "Dim3"}
    # The point estimates are the sensitivity fit's |coefficients| (order as covariate).
    fitted = value_sensitivity(data)[0]["model-0"]
    for entry in ranked["values"]:
        assert entry["estimate"] == pytest.approx(abs(fitted[entry["value"]]["coefficient"]))


def test_sensitivities_take_the_order_as_a_covariate_when_both_orders_were_asked() -> None:
    data = presentation_run(PresentationSpec(scenarios=40, position_bias=0.6, seed=4))
    fitted = value_sensitivity(data)[0]["model-0"]
    design = np.column_stack([data.levels[data.scenario_idx], data.orders])
    ols = sm.OLS(data.decision, sm.add_constant(design)).fit()
    assert fitted["Dim1"]["coefficient"] == pytest.approx(ols.params[1])
    assert fitted["Dim2"]["coefficient"] == pytest.approx(ols.params[2])


def test_robustness_sits_first_after_the_value_sensitivities() -> None:
    result = analyze_basic(presentation_run(PresentationSpec(scenarios=12, seed=1)))
    assert list(result)[:2] == ["valueSensitivity", "robustness"]
    assert set(result["robustness"]["model-0"]) == {
        "orderEffect",
        "phrasingEffect",
        "consistency",
        "ranking",
        "reasons",
    }
    assert "ranking" in result["methodsUsed"]["robustness"]
