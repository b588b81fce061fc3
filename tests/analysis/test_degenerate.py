"""Degenerate runs give defined values and a warning: never a crash, never NaN in JSON."""

from __future__ import annotations

from typing import Any

import pytest

from valuerank.analysis.basic import analyze_basic
from valuerank.analysis.comparison import compare
from valuerank.analysis.data import AnalysisInput
from valuerank.analysis.deep import analyze_deep
from valuerank.analysis.sampling import SampleBasis

from .helpers import run_of, strict_json

LEVELS = {"s1": {"Harm": 1}, "s2": {"Harm": 2}, "s3": {"Harm": 3}}
JUDGED = (["Care"], ["Loyalty"])


def _codes(result: dict[str, Any]) -> set[str]:
    return {w["code"] for w in result["warnings"]}


CASES: dict[str, tuple[AnalysisInput, set[str]]] = {
    "one model": (
        run_of([("m:a", s, d) for s, d in (("s1", 1), ("s2", 3), ("s3", 5))], levels=LEVELS),
        {"SINGLE_MODEL", "SMALL_SAMPLE", "NO_VALUE_JUDGMENTS"},
    ),
    "one scenario": (
        run_of([("m:a", "s1", 2), ("m:b", "s1", 4)], values=[JUDGED, JUDGED]),
        {"SINGLE_SCENARIO", "UNDEFINED_CORRELATION"},
    ),
    "all equal": (
        run_of([(m, s, 3) for m in ("m:a", "m:b") for s in ("s1", "s2", "s3")], levels=LEVELS),
        {"CONSTANT_DECISIONS", "UNDEFINED_CORRELATION"},
    ),
    "all refused": (
        run_of([(m, s, None) for m in ("m:a", "m:b") for s in ("s1", "s2", "s3")], levels=LEVELS),
        {"NO_DECISIONS", "UNDEFINED_CORRELATION"},
    ),
    "missing cells": (
        run_of(
            [("m:a", "s1", 1), ("m:a", "s2", 2), ("m:b", "s2", 5), ("m:b", "s3", 4)],
            levels={"s1": {"Harm": 1}, "s2": {"Harm": 2, "Cost": 1}, "s3": {"Harm": 3}},
            values=[JUDGED, None, JUDGED, None],
        ),
        {"UNDEFINED_CORRELATION", "DIMENSION_MISSING", "PARTIAL_JUDGMENTS"},
    ),
    "no transcripts": (run_of([]), {"NO_TRANSCRIPTS"}),
    "sampled": (
        run_of([("m:a", "s1", 1), ("m:a", "s2", 2)], sample=SampleBasis(5, 2, None)),
        {"SAMPLED_RUN", "POPULATION_UNKNOWN", "NO_DIMENSIONS"},
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_degenerate_runs(case: str) -> None:
    data, expected = CASES[case]
    basic = strict_json(analyze_basic(data))
    assert expected <= _codes(basic), _codes(basic)
    deep = strict_json(analyze_deep(data, basic=basic, bootstrap=10))
    assert isinstance(deep["insights"], list)
    strict_json(compare(data, data, bootstrap=10))


def test_all_refused_reports_rates_and_null_statistics() -> None:
    data, _ = CASES["all refused"]
    basic = strict_json(analyze_basic(data))
    model = basic["perModel"]["m:a"]
    assert model["refusalRate"] == 1.0 and model["decided"] == 0
    assert model["overall"] == {
        "mean": None,
        "stdDev": None,
        "min": None,
        "max": None,
        "confidenceInterval": None,
    }
    assert basic["modelAgreement"]["overallAgreement"] is None
    assert basic["mostContestedScenarios"] == []


def test_rounding_keeps_six_significant_digits_and_drops_non_finite() -> None:
    from valuerank.analysis.output import number, rounded

    values = [1 / 3, 12345.678, 0.0, -2.5e-9, float("nan"), float("inf")]
    assert rounded(values) == [0.333333, 12345.7, 0.0, -2.5e-9, None, None]
    assert [number(v) for v in values] == rounded(values)


def test_degenerate_figures_give_warnings_not_insights() -> None:
    """One scenario: α over one unit is 0 by construction and each model's one comparison
    separates its two values; neither becomes an insight, both are warned about."""
    data, _ = CASES["one scenario"]
    deep = strict_json(analyze_deep(data, basic=strict_json(analyze_basic(data))))
    assert {"FEW_ALPHA_UNITS", "BRADLEY_TERRY_SEPARATION"} <= _codes(deep)
    assert not any("Krippendorff" in s or "principal component" in s for s in deep["insights"])
    care = deep["bradleyTerry"]["m:a"]["values"]["Care"]
    assert (care["strength"], care["direction"]) == (None, "above")
