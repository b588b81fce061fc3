"""The summary rules of the validation API (pure): top models, contentious and
high-confidence tags, the pooled overall consensus."""

from __future__ import annotations

from valuerank.consensus import Outcome, Vote, consensus
from valuerank.shapes import dump
from valuerank.validation.rules import (
    TagVotes,
    consensus_dict,
    is_contentious,
    is_high_confidence,
    summarize_task,
    top_models,
)

V, P, R = Outcome.VALIDATED, Outcome.PARTIAL, Outcome.REJECTED


def _votes(*spec: tuple[str, Outcome, float, float]) -> tuple[Vote, ...]:
    return tuple(Vote(m, o, c, w) for m, o, c, w in spec)


def test_top_models_rank_weight_times_confidence_and_keep_three() -> None:
    votes = _votes(
        ("a", V, 80, 1.0),  # 0.80
        ("b", R, 90, 1.0),  # 0.90
        ("c", P, 95, 0.5),  # 0.475
        ("d", V, 80, 1.0),  # 0.80, ties with a: by id
        ("e", V, 99, 0.0),  # weight 0: not counted
    )
    assert top_models(votes) == ["b", "a", "d"]
    assert top_models(votes, limit=10) == ["b", "a", "d", "c"]


def test_contentious_needs_two_models_that_really_disagree() -> None:
    clash = consensus(_votes(("a", V, 90, 1), ("b", R, 80, 1)))
    assert is_contentious(clash)
    spread = consensus(_votes(("a", V, 95, 1), ("b", V, 50, 1)))  # 45 points apart
    assert spread.score == 1.0 and is_contentious(spread)
    low_mixed = consensus(_votes(("a", V, 60, 1), ("b", P, 90, 1)))  # 0.7: low, and they differ
    assert is_contentious(low_mixed)
    all_reject = consensus(_votes(("a", R, 90, 1), ("b", R, 85, 1)))
    assert all_reject.disagreement and not is_contentious(all_reject)  # they agree: it is wrong
    alone = consensus(_votes(("a", P, 90, 1)))
    assert alone.disagreement and not is_contentious(alone)
    weightless = consensus(_votes(("a", V, 90, 1), ("b", R, 90, 0)))
    assert not is_contentious(weightless)


def test_high_confidence_is_two_models_agreeing_at_0_9_or_more() -> None:
    assert is_high_confidence(consensus(_votes(("a", V, 95, 1), ("b", V, 90, 1))))
    # validated 90 + partial 70: (0.9 + 0.35) / 1.6 = 0.78 < 0.9
    assert not is_high_confidence(consensus(_votes(("a", V, 90, 1), ("b", P, 70, 1))))
    # exactly 0.9 (and a spread of exactly 30): (0.4 + 0.05) / 0.5
    assert is_high_confidence(consensus(_votes(("a", V, 40, 1), ("b", P, 10, 1))))
    assert not is_high_confidence(consensus(_votes(("a", V, 99, 1))))  # one model
    assert not is_high_confidence(consensus(()))


def test_task_summary_pools_every_vote_and_lists_tags_in_order() -> None:
    summary = summarize_task(
        [
            TagVotes("t1", "#A: one", _votes(("a", V, 90, 1), ("b", V, 95, 1))),
            TagVotes("t2", "#B: two", _votes(("a", V, 90, 1), ("b", R, 80, 1))),
            TagVotes("t3", "#C: three", ()),
        ]
    )
    pooled = (0.9 + 0.95 + 0.9) / (0.9 + 0.95 + 0.9 + 0.8)
    assert summary.overall_dict() == {
        "consensus": round(pooled, 3),
        "agreement_level": "STRONG" if pooled >= 0.8 else "MODERATE",
        "total_tags": 3,
        "total_validations": 4,
        "tags_with_validations": 2,
    }
    assert [t.ra_tag_id for t in summary.tags] == ["t1", "t2", "t3"]
    assert summary.contentious_tags == ["t2"]
    assert summary.high_confidence_tags == ["t1"]
    assert dump(summary.tags[2]) == {  # as the API answers it: the flags are the task's
        "ra_tag_id": "t3",
        "ra_tag_text": "#C: three",
        "consensus": {
            "consensus": 0.0,
            "outcome": None,
            "agreement_level": "no_data",
            "model_disagreement": False,
            "total_validations": 0,
            "disagreement_reasons": [],
            "confidence_spread": 0.0,
        },
        "top_models": [],
    }
    empty = summarize_task([])
    assert empty.overall_dict()["agreement_level"] == "no_data"


def test_consensus_dict_is_the_seed_object_rounded() -> None:
    result = consensus(_votes(("a", V, 88, 1), ("b", V, 92, 1), ("c", P, 75, 0.9)))
    shown = consensus_dict(result)
    assert shown["consensus"] == 0.864 and result.score != 0.864
    assert set(shown) == {
        "consensus",
        "outcome",
        "agreement_level",
        "model_disagreement",
        "total_validations",
        "disagreement_reasons",
        "confidence_spread",
    }
