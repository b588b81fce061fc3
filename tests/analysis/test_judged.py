"""NO_VALUES_JUDGED: judges ran on the run but no value was judged in any transcript — said
with its reason (no rubric, a rubric without values, judges that returned none)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from valuerank.analysis.basic import analyze_basic
from valuerank.analysis.data import AnalysisInput
from valuerank.analysis.judged import NO_VALUES_JUDGED, RubricBasis, judged_value_warnings

from .helpers import run_of, strict_json

ROWS = [(m, s, d) for m in ("m:a", "m:b") for s, d in (("s1", 1), ("s2", 3), ("s3", 5))]
NOTHING = ((), ())  # a judged transcript whose consensus names no value


def judged_run(
    values: list[tuple[Any, Any] | None], rubric: RubricBasis | None = None
) -> AnalysisInput:
    return dataclasses.replace(run_of(ROWS, values=values), rubric=rubric)


def warning(data: AnalysisInput) -> dict[str, str]:
    found: list[dict[str, str]] = [
        w for w in strict_json(analyze_basic(data))["warnings"] if w["code"] == NO_VALUES_JUDGED
    ]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize(
    ("rubric", "reason"),
    [
        (None, "the run has no values rubric"),
        (RubricBasis("empty", "v1", 0), "its values rubric empty v1 defines no values"),
        (
            RubricBasis("valuerank-default", "v1", 14),
            "the judges returned no values (or never agreed on one) although the rubric "
            "valuerank-default v1 offered 14",
        ),
    ],
)
def test_judged_without_any_value_says_why(rubric: RubricBasis | None, reason: str) -> None:
    found = warning(judged_run([NOTHING] * len(ROWS), rubric))
    assert found["message"].startswith(
        "6 transcripts were judged but no value was judged in any of them: " + reason
    )
    assert found["recommendation"].startswith("Value win rates are empty.")


def test_one_judged_transcript_is_said_in_the_singular() -> None:
    found = warning(judged_run([NOTHING, *[None] * (len(ROWS) - 1)]))
    assert found["message"].startswith("1 transcript was judged")


def test_a_single_judged_value_anywhere_is_enough() -> None:
    values: list[tuple[Any, Any] | None] = [NOTHING] * len(ROWS)
    values[4] = ((), ("Loyalty",))
    data = judged_run(values, RubricBasis("values", "v1", 5))
    assert judged_value_warnings(data) == []
    assert NO_VALUES_JUDGED not in {w["code"] for w in analyze_basic(data)["warnings"]}


def test_values_named_on_both_lists_only_are_no_verdict() -> None:
    # A value prioritised and deprioritised at once is no verdict: nothing to win or lose.
    data = judged_run([(("Care",), ("Care",))] * len(ROWS))
    assert "Care" in data.values
    assert [w.code for w in judged_value_warnings(data)] == [NO_VALUES_JUDGED]


def test_without_judgments_the_other_warning_speaks() -> None:
    data = run_of(ROWS)  # no judge ran
    codes = {w["code"] for w in analyze_basic(data)["warnings"]}
    assert "NO_VALUE_JUDGMENTS" in codes and NO_VALUES_JUDGED not in codes
    assert judged_value_warnings(run_of([])) == []
