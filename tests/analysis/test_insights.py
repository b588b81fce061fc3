"""Insights state the figures they rest on, grouped so that many models stay readable."""

from __future__ import annotations

from typing import Any

from valuerank.analysis.basic import analyze_basic
from valuerank.analysis.deep import analyze_deep
from valuerank.analysis.synthetic import SyntheticSpec, synthetic_run

from .helpers import run_of


def test_insights_name_the_figures() -> None:
    data = synthetic_run(SyntheticSpec(models=5, scenarios=150, refusal_rate=0.0, seed=3))
    basic = analyze_basic(data)
    deep = analyze_deep(data, basic=basic, bootstrap=20)
    text = deep["insights"]
    pairs = basic["modelAgreement"]["pairwise"].values()
    low = min(pairs, key=lambda p: p["spearmanRho"])
    assert any(
        s.startswith(f"{low['model1']} and {low['model2']} disagree")
        and f"{low['spearmanRho']:.2f}" in s
        for s in text
    )
    drivers = [s for s in text if s.startswith("A higher ")]
    named = [m for s in drivers for m in data.models if m in s]
    assert sorted(named) == sorted(set(named))  # each model in at most one driver sentence
    assert any("Krippendorff's α" in s for s in text)
    assert any("first (highest Bradley–Terry strength)" in s for s in text)


def test_many_models_are_grouped_not_listed_one_by_one() -> None:
    data = synthetic_run(SyntheticSpec(models=20, scenarios=120, seed=5))
    deep = analyze_deep(data, basic=analyze_basic(data), bootstrap=10)
    assert len(deep["insights"]) < 25
    assert any(" more (" in s or " more put" in s for s in deep["insights"])


def test_refusals_are_an_insight() -> None:
    data = synthetic_run(SyntheticSpec(models=3, scenarios=40, refusal_rate=0.5, seed=6))
    deep = analyze_deep(data, basic=analyze_basic(data), bootstrap=10)
    assert sum("refused" in s for s in deep["insights"]) == 3


def _codes(deep: dict[str, Any]) -> set[str]:
    return {w["code"] for w in deep["warnings"]}


def test_pc1_of_two_models_is_no_insight() -> None:
    """With two models PCA has one component: '100 %' is true by construction."""
    data = synthetic_run(SyntheticSpec(models=2, scenarios=60, seed=4))
    deep = analyze_deep(data, basic=analyze_basic(data))
    assert deep["pca"]["components"] == 1 and deep["pca"]["explainedVarianceRatio"] == [1.0]
    assert not any("principal component" in s for s in deep["insights"])
    assert "DEGENERATE_PCA" in _codes(deep)
    three = synthetic_run(SyntheticSpec(models=3, scenarios=60, seed=4))
    deep3 = analyze_deep(three, basic=analyze_basic(three))
    assert any("principal component" in s for s in deep3["insights"])
    assert "DEGENERATE_PCA" not in _codes(deep3)


def test_alpha_from_one_scenario_is_no_insight() -> None:
    rows = [("m:a", "s1", 2), ("m:b", "s1", 4), ("m:a", "s2", 3)]
    deep = analyze_deep(run_of(rows))
    alpha = deep["agreement"]["krippendorffAlpha"]
    assert alpha["units"] == 1 and alpha["value"] == 0.0  # by construction
    assert not any("Krippendorff" in s for s in deep["insights"])
    warning = next(w for w in deep["warnings"] if w["code"] == "FEW_ALPHA_UNITS")
    assert "1 scenario" in warning["message"]


def test_a_value_that_never_lost_is_put_first_as_separated() -> None:
    core = [(["Fairness"], ["Honesty"]), (["Honesty"], ["Fairness"])] * 2
    care = [(["Care"], ["Honesty"])] * 3
    rows = [("m:a", f"s{k}", 3) for k in range(7)]
    deep = analyze_deep(run_of(rows, values=core + care))
    assert deep["bradleyTerry"]["m:a"]["values"]["Care"]["direction"] == "above"
    assert (
        "m:a puts Care first (it never lost to the other values: Bradley–Terry separation)."
        in (deep["insights"])
    )
    assert "BRADLEY_TERRY_SEPARATION" in _codes(deep)
