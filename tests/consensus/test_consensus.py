"""Consensus: the formula, levels, disagreement rules, and judges agreeing on a decision."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from valuerank.consensus import (
    CONFIDENCE_SPREAD,
    CONFLICTING_OUTCOMES,
    LOW_CONSENSUS,
    OUTCOME_WEIGHTS,
    AgreementLevel,
    Judgement,
    Outcome,
    Vote,
    agreement_level,
    consensus,
    decision_consensus,
)

V, P, R = Outcome.VALIDATED, Outcome.PARTIAL, Outcome.REJECTED


def test_outcome_weights() -> None:
    assert OUTCOME_WEIGHTS == {V: 1.0, P: 0.5, R: 0.0}


def test_the_formula_by_hand() -> None:
    votes = [Vote("a", V, 88), Vote("b", V, 92), Vote("c", P, 75, weight=0.9)]
    result = consensus(votes)
    expected = (0.88 + 0.92 + 0.9 * 0.75 * 0.5) / (0.88 + 0.92 + 0.9 * 0.75)
    assert result.score == pytest.approx(expected)
    assert result.level is AgreementLevel.STRONG
    assert result.disagreement is False
    assert result.reasons == ()
    assert result.outcome is V
    assert result.confidence_spread == 17.0
    assert result.total == 3


def test_outcomes_accept_their_string_values() -> None:
    assert Vote("a", "partial", 50).outcome is P  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Vote("a", "maybe", 50)  # type: ignore[arg-type]


def test_empty_is_no_data() -> None:
    result = consensus([])
    assert (result.score, result.level, result.disagreement) == (0.0, AgreementLevel.NO_DATA, False)
    assert result.outcome is None
    assert result.to_dict()["agreement_level"] == "no_data"
    assert result.to_dict()["total_validations"] == 0


def test_zero_weights_or_confidences_are_no_data() -> None:
    for votes in (
        [Vote("a", V, 90, weight=0.0), Vote("b", R, 90, weight=0.0)],
        [Vote("a", V, 0), Vote("b", R, 0)],
    ):
        result = consensus(votes)
        assert result.level is AgreementLevel.NO_DATA
        assert result.score == 0.0
        assert result.disagreement is False
        assert result.total == 2


def test_zero_weight_votes_count_for_nothing() -> None:
    votes = [Vote("a", V, 90), Vote("b", R, 10, weight=0.0)]
    result = consensus(votes)
    assert result.score == 1.0
    assert result.disagreement is False  # neither the conflict nor the spread counts
    assert result.confidence_spread == 0.0


def test_single_vote() -> None:
    for outcome, score, level in ((V, 1.0, "STRONG"), (P, 0.5, "WEAK"), (R, 0.0, "WEAK")):
        result = consensus([Vote("a", outcome, 70)])
        assert result.score == score
        assert result.level.value == level
        assert result.outcome is outcome
    assert consensus([Vote("a", P, 70)]).reasons == (LOW_CONSENSUS,)


@pytest.mark.parametrize(
    ("score", "level"),
    [
        (1.0, "STRONG"),
        (0.8, "STRONG"),
        (0.7999, "MODERATE"),
        (0.6, "MODERATE"),
        (0.5999, "WEAK"),
        (0.0, "WEAK"),
    ],
)
def test_level_thresholds(score: float, level: str) -> None:
    assert agreement_level(score).value == level


def test_exactly_080_is_strong_despite_float_rounding() -> None:
    # 0.7 and 0.1 are not exact in binary; the consensus arithmetic is exact anyway.
    votes = [Vote("a", V, 70), Vote("b", V, 10), Vote("c", R, 20)]
    assert 0.7 + 0.1 != 0.8  # the trap
    result = consensus(votes)
    assert result.score == 0.8
    assert result.level is AgreementLevel.STRONG


def test_exactly_060_is_moderate() -> None:
    votes = [Vote("a", V, 60), Vote("b", R, 40)]
    assert consensus(votes).level is AgreementLevel.MODERATE
    assert consensus(votes).score == 0.6


def test_low_consensus_threshold_is_strict() -> None:
    at = consensus([Vote("a", V, 50), Vote("b", P, 50)])  # (1 + 0.5) / 2 = 0.75
    assert at.score == 0.75 and at.disagreement is False
    below = consensus([Vote("a", V, 49), Vote("b", P, 51)])
    assert below.score < 0.75 and below.reasons == (LOW_CONSENSUS,)


def test_conflicting_outcomes_even_with_high_consensus() -> None:
    votes = [Vote("a", V, 95), Vote("b", V, 95), Vote("c", V, 95), Vote("d", R, 80, weight=0.1)]
    result = consensus(votes)
    assert result.score > 0.9 and result.level is AgreementLevel.STRONG
    assert result.disagreement is True
    assert result.reasons == (CONFLICTING_OUTCOMES,)


def test_validated_with_partial_or_partial_with_rejected_is_no_conflict() -> None:
    assert CONFLICTING_OUTCOMES not in consensus([Vote("a", V, 90), Vote("b", P, 90)]).reasons
    assert CONFLICTING_OUTCOMES not in consensus([Vote("a", P, 90), Vote("b", R, 90)]).reasons


@pytest.mark.parametrize(
    ("low", "high", "flagged"),
    [(60, 90, False), (60, 91, True), (40.1, 70.1, False), (40.1, 70.2, True), (0, 30, False)],
)
def test_confidence_spread_over_30_points(low: float, high: float, flagged: bool) -> None:
    result = consensus([Vote("a", V, high), Vote("b", V, low)])
    assert result.score == 1.0
    assert (CONFIDENCE_SPREAD in result.reasons) is flagged
    assert result.disagreement is flagged
    assert result.confidence_spread == pytest.approx(high - low)


def test_all_reasons_at_once() -> None:
    result = consensus([Vote("a", V, 20), Vote("b", R, 90)])
    assert result.reasons == (LOW_CONSENSUS, CONFLICTING_OUTCOMES, CONFIDENCE_SPREAD)
    assert result.outcome is R


def test_outcome_tie_is_partial() -> None:
    assert consensus([Vote("a", V, 50), Vote("b", R, 50)]).outcome is P
    assert consensus([Vote("a", V, 50), Vote("b", P, 50)]).outcome is P


def test_weights_matter() -> None:
    light = consensus([Vote("a", V, 80, weight=0.5), Vote("b", R, 80, weight=1.5)])
    assert light.score == 0.25
    heavy = consensus([Vote("a", V, 80, weight=1.5), Vote("b", R, 80, weight=0.5)])
    assert heavy.score == 0.75


@pytest.mark.parametrize(
    "kwargs",
    [
        {"confidence": -1},
        {"confidence": 100.5},
        {"confidence": math.nan},
        {"confidence": math.inf},
        {"confidence": 50, "weight": -0.1},
        {"confidence": 50, "weight": math.inf},
    ],
)
def test_invalid_votes(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        Vote("a", V, **kwargs)


def test_non_numbers_are_rejected() -> None:
    with pytest.raises(TypeError):
        Vote("a", V, True)
    with pytest.raises(TypeError):
        Vote("a", V, "50")  # type: ignore[arg-type]


def test_to_dict() -> None:
    data = consensus([Vote("a", V, 90), Vote("b", P, 80)]).to_dict()
    assert data == {
        "consensus": pytest.approx((0.9 + 0.4) / 1.7),  # 0.765
        "outcome": "validated",
        "agreement_level": "MODERATE",
        "model_disagreement": False,
        "total_validations": 2,
        "disagreement_reasons": [],
        "confidence_spread": 10.0,
        "votes": [
            {"model": "a", "outcome": "validated", "confidence": 90, "weight": 1.0},
            {"model": "b", "outcome": "partial", "confidence": 80, "weight": 1.0},
        ],
    }


votes_strategy = st.lists(
    st.builds(
        Vote,
        model=st.text(max_size=5),
        outcome=st.sampled_from(list(Outcome)),
        confidence=st.floats(0, 100),
        weight=st.one_of(st.just(0.0), st.floats(0.001, 10)),
    ),
    max_size=8,
)


@given(votes_strategy)
def test_score_is_a_weighted_mean_of_outcome_weights(votes: list[Vote]) -> None:
    result = consensus(votes)
    assert 0.0 <= result.score <= 1.0
    if result.level is AgreementLevel.NO_DATA:
        assert result.score == 0.0 and not result.disagreement
        return
    counted = [v for v in votes if v.weight > 0 and v.confidence > 0]
    used = {OUTCOME_WEIGHTS[v.outcome] for v in counted}
    assert min(used) - 1e-9 <= result.score <= max(used) + 1e-9
    assert result.level is agreement_level(result.score)
    assert result.disagreement == bool(result.reasons)
    if result.score < 0.75:
        assert LOW_CONSENSUS in result.reasons


@given(votes_strategy, st.floats(0.01, 100))
def test_scaling_all_weights_changes_nothing(votes: list[Vote], factor: float) -> None:
    scaled = [Vote(v.model, v.outcome, v.confidence, v.weight * factor) for v in votes]
    if all(math.isfinite(v.weight) for v in scaled):
        assert consensus(scaled).score == pytest.approx(consensus(votes).score)


# --- judges agreeing on a decision --------------------------------------------------------


def test_single_judge() -> None:
    result = decision_consensus([Judgement("a", 4, 80, prioritized_values=("Freedom",))])
    assert result.decision == 4
    assert result.split is False
    assert result.consensus.score == 1.0
    assert result.consensus.level is AgreementLevel.STRONG
    assert result.prioritized_values == ("Freedom",)
    assert result.prioritized_union == ("Freedom",)


def test_no_judges() -> None:
    result = decision_consensus([])
    assert result.decision is None
    assert result.consensus.level is AgreementLevel.NO_DATA
    assert result.prioritized_values == () and result.prioritized_union == ()


def test_weighted_median_and_vote_outcomes() -> None:
    judges = [Judgement("a", 4, 90), Judgement("b", 5, 80), Judgement("c", 2, 50)]
    result = decision_consensus(judges)
    assert result.decision == 4
    outcomes = [v.outcome for v in result.consensus.votes]
    assert outcomes == [V, P, R]
    assert result.consensus.score == pytest.approx((0.9 + 0.4) / 2.2)
    assert result.consensus.disagreement is True


def test_median_not_mode() -> None:
    # The mode is 1 (two judges), the weighted median is 4: more weight sits at 4 and 5.
    judges = [
        Judgement("a", 1, 40),
        Judgement("b", 1, 40),
        Judgement("c", 4, 60),
        Judgement("d", 5, 60),
    ]
    assert decision_consensus(judges).decision == 4


def test_confidence_and_weight_move_the_median() -> None:
    judges = [Judgement("a", 2, 90), Judgement("b", 4, 30), Judgement("c", 4, 30)]
    assert decision_consensus(judges).decision == 2
    judges[0] = Judgement("a", 2, 90, weight=0.5)
    assert decision_consensus(judges).decision == 4


@pytest.mark.parametrize(
    ("a", "b", "agreed"),
    [(2, 3, 3), (3, 4, 3), (4, 5, 4), (1, 2, 2), (2, 4, 2), (1, 5, 1)],
)
def test_exact_ties_prefer_the_code_nearer_neutral_then_the_lower(
    a: int, b: int, agreed: int
) -> None:
    result = decision_consensus([Judgement("x", a, 70), Judgement("y", b, 70)])
    assert result.decision == agreed
    assert result.split is True


def test_tie_goes_to_the_code_with_more_weight_of_its_own() -> None:
    # Half the weight is at or below 2 and half at or above 5; 5 holds more on its own
    # (100 against 70), so it wins although 2 is nearer neutral.
    judges = [Judgement("a", 1, 30), Judgement("b", 2, 70), Judgement("c", 5, 100)]
    result = decision_consensus(judges)
    assert result.decision == 5 and result.split is True


def test_null_decisions() -> None:
    all_null = decision_consensus([Judgement("a", None, 80), Judgement("b", None, 60)])
    assert all_null.decision is None
    assert all_null.consensus.score == 1.0  # the judges agree there is no decision
    mostly_null = decision_consensus([Judgement("a", None, 80), Judgement("b", 3, 60)])
    assert mostly_null.decision is None
    assert [v.outcome for v in mostly_null.consensus.votes] == [V, R]
    mostly_coded = decision_consensus([Judgement("a", None, 60), Judgement("b", 3, 80)])
    assert mostly_coded.decision == 3
    assert [v.outcome for v in mostly_coded.consensus.votes] == [R, V]
    even = decision_consensus([Judgement("a", None, 70), Judgement("b", 3, 70)])
    assert even.decision == 3  # a tie goes to reading a decision


def test_zero_weight_judges() -> None:
    result = decision_consensus([Judgement("a", 1, 90, weight=0), Judgement("b", 5, 60)])
    assert result.decision == 5
    assert result.consensus.disagreement is False
    nobody = decision_consensus([Judgement("a", 1, 90, weight=0), Judgement("b", 5, 0)])
    assert nobody.decision is None
    assert nobody.consensus.level is AgreementLevel.NO_DATA


def test_confidence_spread_between_judges() -> None:
    thirty = decision_consensus([Judgement("a", 3, 90), Judgement("b", 3, 60)])
    assert thirty.consensus.disagreement is False
    thirty_one = decision_consensus([Judgement("a", 3, 91), Judgement("b", 3, 60)])
    assert thirty_one.consensus.reasons == (CONFIDENCE_SPREAD,)


def test_values_union_and_weighted_majority() -> None:
    judges = [
        Judgement(
            "a",
            4,
            90,
            prioritized_values=("Freedom", "Harmony"),
            deprioritized_values=("Fair_Process",),
        ),
        Judgement("b", 4, 80, prioritized_values=("Freedom",), deprioritized_values=("Harmony",)),
        Judgement("c", 3, 20, prioritized_values=("Compassion", "Freedom", "Freedom")),
    ]
    result = decision_consensus(judges)
    assert result.prioritized_union == ("Freedom", "Harmony", "Compassion")
    assert result.prioritized_values == ("Freedom",)  # Harmony has 90 of 190: not > half
    assert result.deprioritized_union == ("Fair_Process", "Harmony")
    assert result.deprioritized_values == ()
    # Without judge c, Harmony has 90 of 170: a majority.
    without_c = decision_consensus([*judges[:2], Judgement("c", 3, 20, weight=0)])
    assert without_c.prioritized_values == ("Freedom", "Harmony")


def test_majority_is_ordered_by_support() -> None:
    judges = [
        Judgement("a", 4, 90, prioritized_values=("Harmony", "Freedom")),
        Judgement("b", 4, 80, prioritized_values=("Freedom",)),
        Judgement("c", 4, 70, prioritized_values=("Freedom", "Harmony")),
    ]
    assert decision_consensus(judges).prioritized_values == ("Freedom", "Harmony")


@pytest.mark.parametrize("decision", [0, 6, -1, True])
def test_invalid_judgement(decision: int) -> None:
    with pytest.raises(ValueError):
        Judgement("a", decision, 50)


def test_decision_consensus_to_dict() -> None:
    data = decision_consensus([Judgement("a", 2, 80, deprioritized_values=["Loyalty"])]).to_dict()  # type: ignore[arg-type]
    assert data["decision"] == 2
    assert data["split"] is False
    assert data["consensus"]["agreement_level"] == "STRONG"
    assert data["deprioritized_values"] == ["Loyalty"]


@given(
    st.lists(
        st.builds(
            Judgement,
            model=st.just("m"),
            decision=st.one_of(st.none(), st.integers(1, 5)),
            confidence=st.floats(0, 100),
            weight=st.floats(0, 5),
        ),
        max_size=7,
    )
)
def test_agreed_decision_is_one_a_judge_gave(judges: list[Judgement]) -> None:
    result = decision_consensus(judges)
    given_codes = {j.decision for j in judges if j.weight > 0 and j.confidence > 0}
    if result.decision is not None:
        assert result.decision in given_codes
    assert len(result.consensus.votes) == len(judges)
    for judge, vote in zip(judges, result.consensus.votes, strict=True):
        if judge.decision == result.decision:
            assert vote.outcome is V


def test_a_value_named_by_exactly_half_the_weight_is_no_majority() -> None:
    """More than half, as the docstring says: 70 of 140 is not enough, 71 of 141 is."""
    half = decision_consensus(
        [Judgement("a", 3, 70, prioritized_values=("Freedom",)), Judgement("b", 3, 70)]
    )
    assert half.prioritized_values == () and half.prioritized_union == ("Freedom",)
    more = decision_consensus(
        [Judgement("a", 3, 71, deprioritized_values=("Freedom",)), Judgement("b", 3, 70)]
    )
    assert more.deprioritized_values == ("Freedom",)
    # A judge reading no decision still weighs in the total.
    with_null = decision_consensus(
        [Judgement("a", 3, 70, prioritized_values=("Freedom",)), Judgement("b", None, 70)]
    )
    assert with_null.prioritized_values == ()
