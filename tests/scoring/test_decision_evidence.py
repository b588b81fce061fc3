"""What a decision shows besides its code: the `reason` and `evidence` a reviewer reads to
check the parser (to_dict), for each rule, and the label occurrences that decide."""

from __future__ import annotations

from valuerank.scoring import AMBIGUOUS, Decision, decision_code, scale_labels_from_template

LABELS = {5: "strongly support it", 4: "support it", 1: "oppose it"}


def test_the_earlier_pattern_names_a_number_two_patterns_read() -> None:
    # "Rating: 4" and "4/5" both read the same 4: the rating phrase is the evidence.
    assert decision_code("Rating: 4/5") == Decision(
        4, 'explicit rating "Rating: 4"', "explicit", "Rating: 4"
    )


def test_a_leading_digit_shows_the_first_line_up_to_60_characters() -> None:
    first = "4 - somewhat support Jordan competing on this team, because the coach asked"
    shown = first[:60]
    assert decision_code(f"{first}\nSecond line.\nThird line.") == Decision(
        4, f'answer starts with "{shown}"', "leading_digit", shown
    )
    assert decision_code("  2\nBecause of safety.\nAnd jobs.") == Decision(
        2, 'answer starts with "2"', "leading_digit", "2"
    )


def test_a_quoted_label_is_the_reason_and_the_evidence() -> None:
    assert decision_code("I strongly support it.", scale_labels=LABELS) == Decision(
        5, 'quotes the scale label "strongly support it"', "scale_label", "strongly support it"
    )


def test_ambiguous_labels_are_all_shown_in_order() -> None:
    assert decision_code("I oppose it. I support it.", scale_labels=LABELS) == Decision(
        None, AMBIGUOUS, "scale_label", "oppose it; support it"
    )


def test_a_label_said_on_its_own_before_inside_a_longer_one_still_counts() -> None:
    """Every occurrence is looked at: the first "support it" stands alone, the second is
    inside "strongly support it", so both codes are quoted."""
    decision = decision_code("I support it, no, I strongly support it.", scale_labels=LABELS)
    assert decision == Decision(None, AMBIGUOUS, "scale_label", "strongly support it; support it")


def test_label_text_keeps_its_own_letters() -> None:
    """Only emphasis marks are trimmed from a label, never letters at its ends."""
    template = "5 - vote for Malcolm X\n4 - X marks the spot\n1 - **no**"
    assert scale_labels_from_template(template) == {
        5: "vote for Malcolm X",
        4: "X marks the spot",
        1: "no",
    }


def test_a_label_said_alone_between_two_longer_quotes_still_counts() -> None:
    answer = "I strongly support it; I support it; I strongly support it."
    decision = decision_code(answer, scale_labels=LABELS)
    assert decision == Decision(None, AMBIGUOUS, "scale_label", "strongly support it; support it")
