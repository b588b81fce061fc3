"""dimensionAnalysis and correlations on scenario means against statsmodels OLS/ANOVA and
scipy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import stats
from statsmodels.stats.anova import anova_lm

from valuerank.analysis.data import AnalysisInput
from valuerank.analysis.dimensions import correlations, dimension_analysis
from valuerank.analysis.synthetic import SyntheticSpec, synthetic_run

from .helpers import run_of


def _means(data: AnalysisInput, pooled: bool = False) -> pd.DataFrame:
    """The model × scenario means (or each scenario's mean of them), computed with pandas
    from the transcripts, with the scenario's levels."""
    frame = pd.DataFrame(
        {
            "model": [data.models[i] for i in data.model_idx],
            "scenario": [data.scenarios[j] for j in data.scenario_idx],
            "y": data.decision,
        }
    ).dropna()
    cells = frame.groupby(["model", "scenario"], as_index=False)["y"].mean()
    if pooled:
        cells = cells.groupby("scenario", as_index=False)["y"].mean()
    levels = pd.DataFrame(data.levels, columns=list(data.dimensions))
    levels["scenario"] = list(data.scenarios)
    return cells.merge(levels, on="scenario")


def _check_against_references(
    section: dict[str, Any], frame: pd.DataFrame, dims: Sequence[str]
) -> None:
    fit = smf.ols("y ~ " + " + ".join(f"C({d})" for d in dims), data=frame).fit()
    assert section["varianceExplained"] == pytest.approx(fit.rsquared, rel=1e-6)
    assert section["varianceExplainedAdjusted"] == pytest.approx(fit.rsquared_adj, rel=1e-6)
    assert section["varianceExplainedByChance"] == pytest.approx(fit.df_model / (fit.nobs - 1))
    for dim, entry in section["dimensions"].items():
        one_way = smf.ols(f"y ~ C({dim})", data=frame).fit()
        table = anova_lm(one_way)
        eta = table["sum_sq"].iloc[0] / table["sum_sq"].sum()
        assert entry["effectSize"] == pytest.approx(eta, rel=1e-6)
        assert entry["epsilonSquared"] == pytest.approx(one_way.rsquared_adj, rel=1e-6)
        groups = [g["y"].round(10).to_numpy() for _, g in frame.groupby(dim)]  # ties stay ties
        assert entry["pValue"] == pytest.approx(stats.kruskal(*groups).pvalue, rel=1e-6)
        assert entry["n"] == len(frame) and entry["missing"] == 0


def test_the_tests_run_on_scenario_means_and_match_scipy_and_statsmodels() -> None:
    """Three samples per scenario: n is the scenarios; Kruskal–Wallis is scipy's on the
    means, η² and R² statsmodels' ANOVA/OLS on them — per model on the model's scenario
    means, pooled on each scenario's mean of the models' means."""
    data = synthetic_run(SyntheticSpec(models=3, scenarios=120, dimensions=3, samples=3, seed=11))
    section, warnings = dimension_analysis(data)
    assert not warnings and section["unit"] == "scenario"
    _check_against_references(section, _means(data, pooled=True), data.dimensions)
    assert all(e["n"] == 120 for e in section["dimensions"].values())
    ranks = sorted(section["dimensions"].values(), key=lambda e: e["rank"])
    assert [e["effectSize"] for e in ranks] == sorted(
        (e["effectSize"] for e in ranks), reverse=True
    )
    cells = _means(data)
    for model, part in section["byModel"].items():
        mine = cells[cells["model"] == model]
        _check_against_references(part, mine, data.dimensions)
        decided = int((data.decided & (data.model_idx == data.models.index(model))).sum())
        assert all(e["transcripts"] == decided for e in part["dimensions"].values())


def test_repeated_samples_do_not_count_as_evidence() -> None:
    """The same scenario means, asked once or five times per scenario: the per-model p-value
    stays (transcripts counted as independent would shrink it about a thousandfold)."""
    levels = {f"s{k}": {"Harm": 1 + k % 3} for k in range(12)}
    base = [(f"s{k}", 1 + k % 3 + (k % 2)) for k in range(12)]
    once = run_of([("m:a", s, d) for s, d in base], levels=levels)
    five = run_of([("m:a", s, d) for s, d in base for _ in range(5)], levels=levels)
    p_once = dimension_analysis(once)[0]["byModel"]["m:a"]["dimensions"]["Harm"]
    p_five = dimension_analysis(five)[0]["byModel"]["m:a"]["dimensions"]["Harm"]
    assert p_five["pValue"] == pytest.approx(p_once["pValue"]) and p_five["n"] == 12
    assert p_five["transcripts"] == 60
    flat = [np.repeat([d for s, d in base if levels[s]["Harm"] == g], 5) for g in (1, 2, 3)]
    assert stats.kruskal(*flat).pvalue < p_once["pValue"] / 1000


def test_dimensions_missing_from_some_scenarios_are_reported_not_dropped() -> None:
    levels = {"s1": {"Harm": 1, "Cost": 1}, "s2": {"Harm": 2}, "s3": {"Harm": 3, "Cost": 2}}
    rows = [("m:a", s, d) for s, d in (("s1", 1), ("s2", 3), ("s3", 5))] + [
        ("m:b", s, d) for s, d in (("s1", 2), ("s2", 3), ("s3", 4))
    ]
    section, warnings = dimension_analysis(run_of(rows, levels=levels))
    assert section["dimensions"]["Cost"]["missing"] == 1
    assert section["dimensions"]["Cost"]["n"] == 2
    assert section["dimensions"]["Cost"]["transcripts"] == 4
    assert section["dimensions"]["Harm"]["missing"] == 0
    assert [w.code for w in warnings] == ["DIMENSION_MISSING"]
    assert "Cost (1)" in warnings[0].message


def test_no_dimensions_is_a_warning_with_an_empty_section() -> None:
    section, warnings = dimension_analysis(run_of([("m:a", "s1", 2), ("m:a", "s2", 3)]))
    assert section["dimensions"] == {} and section["varianceExplained"] is None
    assert [w.code for w in warnings] == ["NO_DIMENSIONS"]


def test_correlations_match_scipy_on_the_models_scenario_means() -> None:
    data = synthetic_run(
        SyntheticSpec(models=2, scenarios=80, samples=2, seed=12, refusal_rate=0.1)
    )
    found = correlations(data)
    cells = _means(data)
    for model, dims in found.items():
        mine = cells[cells["model"] == model]
        for dim, entry in dims.items():
            ref = stats.pearsonr(mine[dim], mine["y"])
            ci = ref.confidence_interval()
            assert entry["pearson"]["r"] == pytest.approx(ref.statistic)
            assert entry["pearson"]["pValue"] == pytest.approx(ref.pvalue, rel=1e-6)
            assert entry["pearson"]["interval"] == pytest.approx((ci.low, ci.high))
            ref_s = stats.spearmanr(mine[dim], mine["y"])
            assert entry["spearman"]["rho"] == pytest.approx(ref_s.statistic)
            assert entry["spearman"]["pValue"] == pytest.approx(ref_s.pvalue, rel=1e-6)
            assert entry["n"] == len(mine)


def test_pure_noise_explains_what_chance_gives_and_the_adjusted_values_say_so() -> None:
    # Issue 31: R² and η² over few scenario means are biased up; pure noise got R² = 0.32
    # with 6 parameters over 20 means. The adjusted values sit near 0 and the chance level
    # is reported beside them.
    rng = np.random.default_rng(3)
    levels = {f"s{j}": {"A": 1 + j % 4, "B": 1 + (j // 4) % 4} for j in range(20)}
    rows = [("m:a", f"s{j}", int(rng.integers(1, 6))) for j in range(20)]
    section, _ = dimension_analysis(run_of(rows, levels=levels))
    frame = pd.DataFrame(
        {"y": [r[2] for r in rows], "A": [1 + j % 4 for j in range(20)],
         "B": [1 + (j // 4) % 4 for j in range(20)]}
    )  # fmt: skip
    fit = smf.ols("y ~ C(A) + C(B)", data=frame).fit()
    assert section["varianceExplained"] == pytest.approx(fit.rsquared, rel=1e-6)
    assert section["varianceExplainedAdjusted"] == pytest.approx(fit.rsquared_adj, rel=1e-6)
    assert section["varianceExplainedByChance"] == pytest.approx(6 / 19)
    assert section["varianceExplainedAdjusted"] < section["varianceExplained"]
    a = section["dimensions"]["A"]
    assert a["etaSquaredByChance"] == pytest.approx(3 / 19)
    assert a["epsilonSquared"] < a["effectSize"]
