"""Insights state the figures they rest on, grouped so that many models stay readable."""

from __future__ import annotations

from valuerank.analysis.basic import analyze_basic
from valuerank.analysis.deep import analyze_deep
from valuerank.analysis.synthetic import SyntheticSpec, synthetic_run


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
