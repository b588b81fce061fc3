"""dimensionAnalysis and correlations against statsmodels OLS/ANOVA and scipy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import stats
from statsmodels.stats.anova import anova_lm

from valuerank.analysis.dimensions import correlations, dimension_analysis
from valuerank.analysis.synthetic import SyntheticSpec, synthetic_run

from .helpers import run_of


def _frame(data) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    levels = data.levels[data.scenario_idx]
    frame = pd.DataFrame(levels, columns=list(data.dimensions))
    frame["y"] = data.decision
    frame["model"] = [data.models[i] for i in data.model_idx]
    return frame[~np.isnan(data.decision)]


def test_eta_squared_kruskal_and_r_squared_match_references() -> None:
    data = synthetic_run(SyntheticSpec(models=3, scenarios=120, dimensions=3, seed=11))
    section, warnings = dimension_analysis(data)
    assert not warnings
    frame = _frame(data)
    fit = smf.ols("y ~ " + " + ".join(f"C({d})" for d in data.dimensions), data=frame).fit()
    assert section["varianceExplained"] == pytest.approx(fit.rsquared, rel=1e-6)
    for dim, entry in section["dimensions"].items():
        one = smf.ols(f"y ~ C({dim})", data=frame).fit()
        table = anova_lm(one)
        eta = table["sum_sq"].iloc[0] / table["sum_sq"].sum()
        assert entry["effectSize"] == pytest.approx(eta, rel=1e-6)
        groups = [g["y"].to_numpy() for _, g in frame.groupby(dim)]
        assert entry["pValue"] == pytest.approx(stats.kruskal(*groups).pvalue, rel=1e-6)
        assert entry["n"] == len(frame) and entry["missing"] == 0
    ranks = sorted(section["dimensions"].values(), key=lambda e: e["rank"])
    assert [e["effectSize"] for e in ranks] == sorted(
        (e["effectSize"] for e in ranks), reverse=True
    )
    for model, part in section["byModel"].items():
        mine = frame[frame["model"] == model]
        fit = smf.ols("y ~ " + " + ".join(f"C({d})" for d in data.dimensions), data=mine).fit()
        assert part["varianceExplained"] == pytest.approx(fit.rsquared, rel=1e-6)


def test_dimensions_missing_from_some_transcripts_are_reported_not_dropped() -> None:
    levels = {"s1": {"Harm": 1, "Cost": 1}, "s2": {"Harm": 2}, "s3": {"Harm": 3, "Cost": 2}}
    rows = [("m:a", s, d) for s, d in (("s1", 1), ("s2", 3), ("s3", 5))] + [
        ("m:b", s, d) for s, d in (("s1", 2), ("s2", 3), ("s3", 4))
    ]
    section, warnings = dimension_analysis(run_of(rows, levels=levels))
    assert section["dimensions"]["Cost"]["missing"] == 2
    assert section["dimensions"]["Cost"]["n"] == 4
    assert section["dimensions"]["Harm"]["missing"] == 0
    assert [w.code for w in warnings] == ["DIMENSION_MISSING"]
    assert "Cost (2)" in warnings[0].message


def test_no_dimensions_is_a_warning_with_an_empty_section() -> None:
    section, warnings = dimension_analysis(run_of([("m:a", "s1", 2), ("m:a", "s2", 3)]))
    assert section["dimensions"] == {} and section["varianceExplained"] is None
    assert [w.code for w in warnings] == ["NO_DIMENSIONS"]


def test_correlations_match_scipy_with_intervals() -> None:
    data = synthetic_run(SyntheticSpec(models=2, scenarios=80, seed=12, refusal_rate=0.1))
    found = correlations(data)
    frame = _frame(data)
    for model, dims in found.items():
        mine = frame[frame["model"] == model]
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
