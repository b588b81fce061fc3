"""Judges of one transcript: what `decision_consensus` reports beyond the agreed code
(the split flag without a median, every judge's vote, the values' majority and its order,
and the whole `to_dict` the API serves)."""

from __future__ import annotations

from valuerank.consensus import Judgement, Outcome, decision_consensus

V, P, R = Outcome.VALIDATED, Outcome.PARTIAL, Outcome.REJECTED


def test_no_median_means_no_split() -> None:
    """`split` is only true when a tie-break chose between two medians."""
    assert decision_consensus([]).split is False
    assert decision_consensus([Judgement("a", None, 80)]).split is False
    assert decision_consensus([Judgement("a", 2, 80)]).split is False


def test_every_null_judge_adds_to_the_weight_of_none() -> None:
    # Two judges reading no decision (40 + 40) outweigh one reading 3 (60).
    judges = [Judgement("a", None, 40), Judgement("b", None, 40), Judgement("c", 3, 60)]
    assert decision_consensus(judges).decision is None


def test_each_vote_is_the_judges_own() -> None:
    judges = [Judgement("a", 4, 90, weight=2.0), Judgement("b", 3, 60), Judgement("c", 1, 70)]
    votes = decision_consensus(judges).consensus.votes
    assert [(v.model, v.outcome, v.confidence, v.weight) for v in votes] == [
        ("a", V, 90, 2.0),
        ("b", P, 60, 1.0),
        ("c", R, 70, 1.0),
    ]


def test_judges_reading_no_decision_count_in_the_values_majority() -> None:
    # Freedom is named by 60 of 120 (the null judge's 40 included): not more than half.
    judges = [
        Judgement("a", 3, 60, prioritized_values=("Freedom",)),
        Judgement("b", 3, 20),
        Judgement("c", None, 40),
    ]
    result = decision_consensus(judges)
    assert result.prioritized_values == ()
    assert result.prioritized_union == ("Freedom",)


def test_majority_values_are_ordered_by_support_then_first_mention() -> None:
    judges = [
        Judgement("a", 4, 90, prioritized_values=("Harmony", "Freedom", "Care")),
        Judgement("b", 4, 80, prioritized_values=("Harmony", "Care", "Freedom")),
        Judgement("c", 4, 70, prioritized_values=("Harmony",)),
    ]
    # Harmony 240, then Freedom and Care tie at 170: Freedom was named first.
    assert decision_consensus(judges).prioritized_values == ("Harmony", "Freedom", "Care")


def test_decision_consensus_to_dict_in_full() -> None:
    judges = [
        Judgement("a", 2, 80, prioritized_values=("Care",), deprioritized_values=("Loyalty",)),
        Judgement("b", 2, 60, prioritized_values=("Care", "Freedom")),
    ]
    data = decision_consensus(judges).to_dict()
    assert set(data) == {
        "decision",
        "split",
        "consensus",
        "prioritized_values",
        "deprioritized_values",
        "prioritized_union",
        "deprioritized_union",
    }
    assert data["decision"] == 2 and data["split"] is False
    assert data["consensus"]["agreement_level"] == "STRONG"
    assert data["prioritized_values"] == ["Care"]
    assert data["deprioritized_values"] == ["Loyalty"]  # 80 of 140
    assert data["prioritized_union"] == ["Care", "Freedom"]
    assert data["deprioritized_union"] == ["Loyalty"]
