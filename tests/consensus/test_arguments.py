"""The argument checks of `Vote` and `Judgement`: bounds, and messages that name the field.

A wrong confidence or weight comes from a stored validation or a judge's answer; the error
must say which field and which bounds, or the person reading it cannot fix the input.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import pytest

from valuerank.consensus import Judgement, Outcome, Vote

V = Outcome.VALIDATED


def _vote(confidence: float, weight: float = 1.0) -> Vote:
    return Vote("a", V, confidence, weight)


def _judgement(confidence: float, weight: float = 1.0) -> Judgement:
    return Judgement("a", 3, confidence, weight)


Make = Callable[..., Vote | Judgement]
MAKERS = [pytest.param(_vote, id="vote"), pytest.param(_judgement, id="judgement")]


@pytest.mark.parametrize("make", MAKERS)
def test_the_bounds_themselves_are_accepted(make: Make) -> None:
    for confidence, weight in [(0.0, 0.0), (100.0, 1.0), (100, 1e9)]:
        made = make(confidence, weight)
        assert (made.confidence, made.weight) == (confidence, weight)


@pytest.mark.parametrize("make", MAKERS)
@pytest.mark.parametrize(
    ("confidence", "shown"),
    [(100.5, "100.5"), (101, "101"), (150.0, "150.0"), (-1, "-1"), (math.nan, "nan")],
)
def test_a_confidence_out_of_0_to_100_names_the_field_and_its_bounds(
    make: Make, confidence: float, shown: str
) -> None:
    expected = f"confidence must be a finite number 0.0..100.0, got {shown}"
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
        make(confidence)


@pytest.mark.parametrize("make", MAKERS)
@pytest.mark.parametrize(("weight", "shown"), [(-0.1, "-0.1"), (math.inf, "inf")])
def test_a_negative_or_infinite_weight_names_the_field_and_its_lower_bound(
    make: Make, weight: float, shown: str
) -> None:
    expected = f"weight must be a finite number >= 0.0, got {shown}"
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
        make(50, weight)


@pytest.mark.parametrize("make", MAKERS)
def test_a_non_number_names_the_field_and_the_type_given(make: Make) -> None:
    with pytest.raises(TypeError, match=r"^confidence must be a number, not str$"):
        make("50")
    with pytest.raises(TypeError, match=r"^weight must be a number, not bool$"):
        make(50, True)


@pytest.mark.parametrize("decision", [0, 6, True, 2.0])
def test_a_decision_outside_1_to_5_is_refused_with_the_value(decision: object) -> None:
    expected = f"decision must be an integer 1..5 or None, got {decision!r}"
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
        Judgement("a", decision, 50)  # type: ignore[arg-type]


def test_value_lists_are_kept_as_tuples() -> None:
    """Judges' values arrive as JSON lists; a frozen judgement holds (and hashes) tuples."""
    judgement = Judgement(
        "a",
        3,
        50,
        prioritized_values=["Freedom"],  # type: ignore[arg-type]
        deprioritized_values=["Harmony"],  # type: ignore[arg-type]
    )
    assert judgement.prioritized_values == ("Freedom",)
    assert judgement.deprioritized_values == ("Harmony",)
    assert hash(judgement) == hash(
        Judgement("a", 3, 50, prioritized_values=("Freedom",), deprioritized_values=("Harmony",))
    )
