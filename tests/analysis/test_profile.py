"""perModel, visualizationData and mostContestedScenarios against references computed here."""

from __future__ import annotations

import statistics

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from valuerank.analysis.basic import analyze_basic
from valuerank.analysis.profile import contested, per_model, visualization
from valuerank.analysis.sampling import SampleBasis
from valuerank.analysis.synthetic import SyntheticSpec, synthetic_run

from .helpers import run_of, strict_json

A, B = "openai:gpt-4.1", "anthropic:claude-sonnet-4-5"


def test_per_model_figures() -> None:
    rows = [
        (A, "s1", 1),
        (A, "s2", 4),
        (A, "s3", 5),
        (A, "s4", None),
        (B, "s1", 3),
        (B, "s2", None),
    ]
    reasons = [None, None, None, "refusal", None, "unparseable"]
    values = [
        (["Honesty"], ["Loyalty"]),
        (["Honesty"], []),
        (["Loyalty"], ["Honesty"]),
        None,
        ([], ["Honesty"]),
        ([], []),
    ]
    data = run_of(rows, values=values, reasons=reasons)
    profile = strict_json(per_model(data))
    a = profile[A]
    assert a["sampleSize"] == 4 and a["decided"] == 3
    assert a["overall"]["mean"] == pytest.approx(statistics.mean([1, 4, 5]), rel=1e-6)
    assert a["overall"]["stdDev"] == pytest.approx(statistics.stdev([1, 4, 5]), rel=1e-6)
    assert (a["overall"]["min"], a["overall"]["max"]) == (1, 5)
    assert a["refusals"] == 1 and a["refusalRate"] == 0.25 and a["unparseableRate"] == 0
    honesty = a["values"]["Honesty"]
    assert honesty["count"] == {"prioritized": 2, "deprioritized": 1, "neutral": 0}
    assert honesty["winRate"] == pytest.approx(2 / 3, rel=1e-6)
    lo, hi = proportion_confint(2, 3, method="wilson")
    ci = honesty["confidenceInterval"]
    assert (ci["lower"], ci["upper"]) == (pytest.approx(lo, rel=1e-5), pytest.approx(hi, rel=1e-5))
    assert ci["method"] == "wilson_score_scenario_clustered" and ci["level"] == 0.95
    assert ci["scenarios"] == 3 and a["scenarios"] == 3
    b = profile[B]
    assert b["unparseable"] == 1 and b["refusals"] == 0
    assert b["overall"]["stdDev"] is None  # one decision: undefined, not 0
    loyalty = b["values"]["Loyalty"]  # judged twice, named by neither: neutral both times
    assert loyalty["count"] == {"prioritized": 0, "deprioritized": 0, "neutral": 2}
    assert loyalty["winRate"] == 0.5
    assert (loyalty["confidenceInterval"]["lower"], loyalty["confidenceInterval"]["upper"]) == (
        0,
        1,
    )


def test_per_model_matches_a_reference_on_a_synthetic_run() -> None:
    data = synthetic_run(SyntheticSpec(models=4, scenarios=60, samples=2, seed=3))
    profile = per_model(data)
    for i, model in enumerate(data.models):
        mine = data.model_idx == i
        decided = data.decision[mine & data.decided]
        overall = profile[model]["overall"]
        assert overall["mean"] == pytest.approx(decided.mean())
        assert overall["stdDev"] == pytest.approx(decided.std(ddof=1))
        assert profile[model]["sampleSize"] == int(mine.sum())
        for j, value in enumerate(data.values):
            status = data.value_status[mine & data.judged, j]
            count = profile[model]["values"][value]["count"]
            assert count["prioritized"] == int((status == 1).sum())
            assert count["deprioritized"] == int((status == -1).sum())
            assert count["neutral"] == int((status == 0).sum())


def test_one_sample_per_scenario_cannot_use_the_correction() -> None:
    """The samples' own variance is not separable from the scenarios' spread: the interval
    of a 10 % sample is the ordinary one, and says so (no `_fpc`)."""
    rows = [(A, f"s{k}", 1 + k % 5) for k in range(12)]
    values = [(["Honesty"], []) if k % 3 else ([], ["Honesty"]) for k in range(12)]
    plain = per_model(run_of(rows, values=values))[A]
    sampled = per_model(run_of(rows, values=values, sample=SampleBasis(10, 12, 120)))[A]
    assert sampled["overall"]["confidenceInterval"] == plain["overall"]["confidenceInterval"]
    assert sampled["values"]["Honesty"] == plain["values"]["Honesty"]
    assert sampled["overall"]["confidenceInterval"]["method"] == "t_scenario_clustered"
    ref = stats.t.interval(
        0.95, 11, loc=np.mean([1 + k % 5 for k in range(12)]),
        scale=stats.sem([1 + k % 5 for k in range(12)]),
    )  # fmt: skip
    ci = plain["overall"]["confidenceInterval"]
    assert (ci["lower"], ci["upper"]) == pytest.approx(ref)


def test_repeated_samples_of_a_sampled_run_use_the_correction() -> None:
    """Three samples per scenario that mostly agree (the scenarios differ more than the
    samples): half the population run, the intervals narrow against an unknown population."""
    cases = [(k, r) for k in range(12) for r in range(3)]
    rows = [(A, f"s{k}", min(5, 1 + k % 5 + (r == 0))) for k, r in cases]
    values = [(["Honesty"], []) if k % 3 or r == 0 else ([], ["Honesty"]) for k, r in cases]
    unknown = per_model(run_of(rows, values=values, sample=SampleBasis(10, 12, None)))[A]
    sampled = per_model(run_of(rows, values=values, sample=SampleBasis(50, 12, 24)))[A]
    for part in ("overall", "values"):
        wide = unknown[part] if part == "overall" else unknown[part]["Honesty"]
        narrow = sampled[part] if part == "overall" else sampled[part]["Honesty"]
        w, n = wide["confidenceInterval"], narrow["confidenceInterval"]
        assert n["method"].endswith("_fpc") and not w["method"].endswith("_fpc")
        assert n["upper"] - n["lower"] < w["upper"] - w["lower"]


def test_visualization_data() -> None:
    rows = [(A, "s1", 2), (A, "s1", 4), (A, "s2", 5), (B, "s2", None)]
    data = run_of(rows)
    vis = visualization(data, data.cell_means())
    assert vis["decisionDistribution"][A] == {"1": 0, "2": 1, "3": 0, "4": 1, "5": 1}
    assert vis["decisionDistribution"][B] == {str(k): 0 for k in range(1, 6)}
    assert vis["modelScenarioMatrix"] == {A: {"s1": 3.0, "s2": 5.0}, B: {}}


def test_contested_scenarios_use_the_population_variance_of_decided_transcripts() -> None:
    rows = [
        (A, "calm", 3), (B, "calm", 3),
        (A, "split", 1), (B, "split", 5), (B, "split", 4), (A, "split", None),
        (A, "lone", 2),
        (A, "mild", 2), (B, "mild", 3),
    ]  # fmt: skip
    data = run_of(rows)
    found = contested(data, data.cell_means())
    assert [c["scenarioId"] for c in found] == ["split", "mild", "calm"]  # "lone": one decision
    assert found[0]["variance"] == pytest.approx(np.var([1, 5, 4]))
    assert found[0]["modelScores"] == {A: 1.0, B: 4.5}
    assert found[0]["scenarioName"] == "name of split"


def test_basic_analysis_keeps_the_original_keys_and_is_strict_json() -> None:
    data = synthetic_run(SyntheticSpec(models=3, scenarios=40))
    result = strict_json(analyze_basic(data))
    assert set(result) >= {
        "perModel", "modelAgreement", "dimensionAnalysis", "mostContestedScenarios",
        "visualizationData", "methodsUsed", "warnings", "computedAt", "durationMs",
        "meta", "sample",
    }  # fmt: skip
    assert result["methodsUsed"]["winRateCI"] == "wilson_score_scenario_clustered"
    assert result["methodsUsed"]["meanCI"] == "t_scenario_clustered"
    assert result["methodsUsed"]["unit"] == "scenario"
    assert result["methodsUsed"]["alpha"] == 0.05 and result["methodsUsed"]["codeVersion"]
    assert len(result["mostContestedScenarios"]) == 5
    for warning in result["warnings"]:
        assert set(warning) == {"code", "message", "recommendation"}


def test_methods_used_names_what_computed_each_figure() -> None:
    data = synthetic_run(SyntheticSpec(models=3, scenarios=40))
    methods = analyze_basic(data)["methodsUsed"]
    holm = [v for v in methods["variants"] if v.startswith("Holm")]
    assert len(holm) == 1 and "via statsmodels" not in holm[0]
    assert "intervals.holm" in holm[0] and "gc.collect()" in holm[0]
    assert methods["winRateCILibrary"].startswith("statsmodels proportion_confint")
    assert methods["finitePopulationCorrection"] is None
    sampled = synthetic_run(SyntheticSpec(models=3, scenarios=40, sample=SampleBasis(10, 40, 400)))
    methods = analyze_basic(sampled)["methodsUsed"]
    how = methods["finitePopulationCorrection"]
    assert "fpc^2 = (N - n)/(N - 1) = 0.902256" in how and "10 % sample: 40 of 400" in how
    assert "Kish's effective size" in how and "Satterthwaite" in how
    assert methods["meanCI"] == "t_scenario_clustered_fpc"


def test_a_model_that_refused_every_transcript_has_no_value_figures() -> None:
    # Issue 31: the judges read values into refusals, and the refuser got win rates and
    # strengths (Childrens_Rights 1.00 [0.91, 1.00]). A refusal takes no side.
    from valuerank.analysis.values import bradley_terry

    rows: list[tuple[str, str, int | None]] = [("m:refuser", f"s{k}", None) for k in range(6)]
    rows += [("m:decider", f"s{k}", 1 + k % 5) for k in range(6)]
    verdicts = [(["Care", "Fairness"][k % 2 :], ["Loyalty"]) for k in range(6)]
    verdicts += [(["Care"], ["Loyalty"]) if k % 2 else (["Loyalty"], ["Care"]) for k in range(6)]
    data = run_of(rows, values=verdicts)
    result = strict_json(analyze_basic(data))
    refuser = result["perModel"]["m:refuser"]
    assert refuser["values"] == {}
    assert "refused every transcript" in refuser["valuesUnavailable"]
    assert result["perModel"]["m:decider"]["valuesUnavailable"] is None
    assert result["perModel"]["m:decider"]["values"]["Care"]["count"]["prioritized"] == 3
    found = [w for w in result["warnings"] if w["code"] == "NO_VALUE_VERDICTS"]
    assert len(found) == 1 and "m:refuser" in found[0]["message"]
    strengths, warnings = bradley_terry(data)
    assert strengths["m:refuser"] is None and strengths["m:decider"] is not None
    assert any(w.code == "NO_VALUE_VERDICTS" and "m:refuser" in w.message for w in warnings)
