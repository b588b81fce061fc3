"""valueSensitivity: against statsmodels directly, by parameter recovery, on degenerate runs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

from valuerank.analysis.basic import analyze_basic
from valuerank.analysis.cluster_robust import cr2_fit
from valuerank.analysis.sensitivity import value_sensitivity
from valuerank.analysis.sensitivity_words import sentence
from valuerank.analysis.synthetic import (
    RecoverySpec,
    SyntheticSpec,
    recovery_run,
    synthetic_run,
)

from .helpers import run_of, strict_json


def test_matches_a_statsmodels_formula_fit_clustered_by_scenario() -> None:
    """Same coefficients as an independent statsmodels fit on a data frame (missing
    dimensions, refusals and several samples per scenario included), and the CR2 interval
    of that frame's own design matrix (the estimator itself is checked against statsmodels
    and scipy in test_cluster_robust.py)."""
    spec = SyntheticSpec(models=3, scenarios=60, dimensions=3, samples=3, seed=5)
    data = synthetic_run(spec)
    section, warnings = value_sensitivity(data)
    assert not warnings
    frame = pd.DataFrame(data.levels[data.scenario_idx], columns=list(data.dimensions))
    frame["y"] = data.decision
    frame["model"] = [data.models[i] for i in data.model_idx]
    frame["scenario"] = data.scenario_idx
    frame = frame.dropna()
    formula = "y ~ " + " + ".join(data.dimensions)
    for model in data.models:
        mine = frame[frame["model"] == model]
        model_fit = smf.ols(formula, data=mine)
        fit = model_fit.fit()
        cr2 = cr2_fit(
            np.asarray(model_fit.endog), np.asarray(model_fit.exog), mine["scenario"].to_numpy()
        )
        for k, dim in enumerate(model_fit.exog_names):
            if dim == "Intercept":
                continue
            entry = section[model][dim]
            assert entry["coefficient"] == pytest.approx(fit.params[dim], rel=1e-9)
            assert entry["ci95"] == pytest.approx([cr2.lower[k], cr2.upper[k]], rel=1e-9)
            assert entry["pValue"] == pytest.approx(cr2.pvalues[k], rel=1e-9)
            assert entry["n"] == len(mine) and entry["scenarios"] == mine["scenario"].nunique()
    # The clustering matters: several samples per scenario, the naive interval is narrower.
    naive = smf.ols(formula, data=frame[frame["model"] == data.models[0]]).fit()
    clustered = section[data.models[0]][data.dimensions[0]]["ci95"]
    assert naive.bse[data.dimensions[0]] * 2 * 1.96 < clustered[1] - clustered[0]


def test_parameter_recovery_intervals_cover_the_truth() -> None:
    """150 simulated runs of a known model (scenario-level noise, rounding to the scale):
    mean estimates near the effects, 95 % intervals covering them 88–99 % of the time (a
    band 4 binomial SEs wide around 95 %, fixed seeds: it cannot flake)."""
    spec = RecoverySpec()
    runs = 150
    truth = np.array(spec.effects)
    estimates = np.zeros((runs, *truth.shape))
    covered = np.zeros(truth.shape)
    for r in range(runs):
        data = recovery_run(RecoverySpec(seed=10_000 + r))
        section, _ = value_sensitivity(data)
        for i, model in enumerate(data.models):
            for k, dim in enumerate(data.dimensions):
                entry = section[model][dim]
                estimates[r, i, k] = entry["coefficient"]
                lo, hi = entry["ci95"]
                covered[i, k] += lo <= truth[i, k] <= hi
    coverage = covered / runs
    assert np.all((coverage >= 0.88) & (coverage <= 0.99)), coverage
    spread = estimates.std(axis=0) / np.sqrt(runs)
    assert np.all(np.abs(estimates.mean(axis=0) - truth) < 4 * spread + 0.01)


def test_degenerate_inputs_give_nulls_and_warning_codes() -> None:
    cases = {
        # Cost never varies; Harm does.
        "constant": (
            {f"s{j}": {"Harm": 1 + j % 3, "Cost": 2} for j in range(9)},
            [1, 3, 5, 2, 3, 4, 1, 3, 5],
            {"Harm": "ok", "Cost": "constant"},
            "SENSITIVITY_CONSTANT_DIMENSION",
        ),
        # Cost is Harm shifted: neither can be told apart.
        "collinear": (
            {f"s{j}": {"Harm": 1 + j % 3, "Cost": 2 + j % 3, "Tenure": j % 2} for j in range(9)},
            [1, 3, 5, 2, 3, 4, 1, 4, 5],
            {"Harm": "collinear", "Cost": "collinear", "Tenure": "ok"},
            "SENSITIVITY_COLLINEAR",
        ),
        # Two scenarios for an intercept and a slope: no cluster-robust interval.
        "few": (
            {"s1": {"Harm": 1}, "s2": {"Harm": 3}},
            [2, 4],
            {"Harm": "ok"},
            "SENSITIVITY_FEW_SCENARIOS",
        ),
        "all equal": (
            {f"s{j}": {"Harm": 1 + j % 3} for j in range(6)},
            [3] * 6,
            {"Harm": "ok"},
            "SENSITIVITY_EXACT_FIT",
        ),
    }
    for name, (levels, decisions, statuses, code) in cases.items():
        data = run_of(
            [("m:a", s, d) for s, d in zip(sorted(levels), decisions, strict=True)],
            levels=levels,
        )
        basic = strict_json(analyze_basic(data))
        assert code in {w["code"] for w in basic["warnings"]}, name
        section = basic["valueSensitivity"]["m:a"]
        for dim, status in statuses.items():
            assert section[dim]["status"] == status, (name, dim)
            if status != "ok":
                assert section[dim]["coefficient"] is None
                assert section[dim]["ci95"] is None and section[dim]["pValue"] is None
        if name in ("few", "all equal"):
            assert section["Harm"]["coefficient"] == pytest.approx(1.0 if name == "few" else 0)
            assert section["Harm"]["ci95"] is None and section["Harm"]["pValue"] is None
    single = strict_json(analyze_basic(run_of([("m:a", "s1", 2)], levels={"s1": {"Harm": 1}})))
    assert single["valueSensitivity"]["m:a"]["Harm"]["status"] == "constant"


def test_refused_model_and_incomplete_scenarios() -> None:
    levels = {"s1": {"Harm": 1, "Cost": 1}, "s2": {"Harm": 2}, "s3": {"Harm": 3, "Cost": 2}}
    rows = [("m:a", "s1", 1), ("m:a", "s2", 3), ("m:a", "s3", 5), ("m:b", "s1", None)]
    basic = strict_json(analyze_basic(run_of(rows, levels=levels)))
    assert "SENSITIVITY_INCOMPLETE_SCENARIOS" in {w["code"] for w in basic["warnings"]}
    assert basic["valueSensitivity"]["m:a"]["Harm"]["n"] == 2
    assert basic["valueSensitivity"]["m:b"]["Harm"]["status"] == "no_data"
    empty = strict_json(analyze_basic(run_of([])))
    assert empty["valueSensitivity"] == {}


def test_basic_analysis_puts_sensitivity_first_with_values_and_scale() -> None:
    data = recovery_run(RecoverySpec(scenarios=30))
    labelled = type(data)(
        **{
            **data.__dict__,
            "dimension_values": {"Dim1": "Freedom", "Dim2": "Fair process"},
            "scale_labels": {
                1: "somewhat support Jordan not competing",
                5: "strongly support Jordan competing",
            },
        }
    )
    basic = strict_json(analyze_basic(labelled))
    assert next(iter(basic)) == "valueSensitivity"
    assert basic["methodsUsed"]["valueSensitivity"].startswith("ols_cr2_by_scenario")
    assert basic["scaleLabels"]["5"] == "strongly support Jordan competing"
    entry = basic["valueSensitivity"]["model-0"]["Dim1"]
    assert entry["value"] == "Freedom"
    assert basic["valueSensitivity"]["model-0"]["Dim3"]["value"] == "Dim3"
    assert {"perModel", "modelAgreement", "dimensionAnalysis", "methodsUsed"} <= set(basic)
    text = sentence("model-0", entry, basic["scaleLabels"])
    assert text.startswith("a stronger Freedom stake moves model-0 towards ")
    lo, hi = entry["ci95"]
    if entry["coefficient"] > 0:
        assert "'support Jordan competing' by" in text and f"[{lo:.2f}, {hi:.2f}]" in text
    else:
        assert "'support Jordan not competing' by" in text and f"[{-hi:.2f}, {-lo:.2f}]" in text


def test_the_coefficient_is_per_score_unit_not_per_level_step() -> None:
    # Issue 31: a dimension scored 1, 2, 3, 5 moves the decision by one coefficient per
    # score unit, so its 3 → 5 step moves it twice as far: the label says "per score unit".
    scores = [1, 2, 3, 5]
    levels = {f"s{j}": {"Harm": scores[j % 4]} for j in range(12)}
    noise = [0.1, -0.1, 0.0]
    rows = [("m:a", f"s{j}", round(1 + 0.5 * scores[j % 4] + noise[j // 4])) for j in range(12)]
    data = run_of(rows, levels=levels)
    found, _ = value_sensitivity(data)
    entry = found["m:a"]["Harm"]
    x = np.array([scores[j % 4] for j in range(12)], dtype=float)
    y = np.array([r[2] for r in rows], dtype=float)
    slope = np.polyfit(x, y, 1)[0]  # OLS slope over the scores themselves
    assert entry["coefficient"] == pytest.approx(slope, rel=1e-6)
    assert "points per score unit" in sentence("m:a", {**entry, "value": "Harm"}, None)
