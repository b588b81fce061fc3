"""A scale's numbered lines, their mirror and decisions mapped back (`scoring.scale`)."""

from __future__ import annotations

from valuerank.scoring.scale import ScaleLine, map_decision, mirrored_scale, scale_lines


def test_the_first_line_of_each_number_counts_and_later_lines_still_do() -> None:
    body = "1 - yes\n2 - maybe\n1 - yes again\n3 - no"
    assert scale_lines(body) == [
        ScaleLine(1, "yes", 4, 7),
        ScaleLine(2, "maybe", 12, 17),
        ScaleLine(3, "no", 36, 38),
    ]


def test_two_lines_are_a_scale_one_is_not() -> None:
    assert mirrored_scale("Pick:\n1 - yes\n2 - no\nThanks.") == "Pick:\n1 - no\n2 - yes\nThanks."
    assert mirrored_scale("Pick:\n1 - yes\nThanks.") is None


def test_no_decision_maps_to_no_decision() -> None:
    assert map_decision(None, 1, 5) is None
    assert map_decision(2, 1, 5) == 4
