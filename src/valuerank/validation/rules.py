"""How the validation API summarises validations: the consensus of a tag, of a task, and
which tags are contentious or held with high confidence. Pure functions over votes.

The consensus itself is `valuerank.consensus` (docs/architecture.md, "Scoring"), written once:
`consensus = Σ wᵢ·cᵢ·oᵢ / Σ wᵢ·cᵢ`. Here a vote is one model's current validation of a tag
(its latest; earlier ones are history), w its registry weight, c its confidence / 100.

* **Tag consensus**: `consensus(votes of the tag)`.
* **Overall consensus of a task**: the same formula over the votes of all its tags pooled
  (a tag with more validations counts more); `total_tags` counts every tag of the task,
  `total_validations` every vote; `no_data` when no tag has one.
* **top_models** of a tag: its validators by weight × confidence, highest first (ties by
  id), at most three.
* **contentious_tags**: tags with at least two counted votes whose consensus reports a model
  disagreement *between the models*: their outcomes differ (`validated` + `partial`
  scoring under 0.75, or `validated` + `rejected`), or their confidences spread over 30
  points. Models agreeing on a low score (every one says `rejected`) is a consensus, not a
  dispute, so it is not contentious — though the formula's `model_disagreement` flag is set.
* **high_confidence_tags**: tags with at least two counted votes, no model disagreement and
  a consensus of at least 0.90.

Votes of weight 0 count for nothing (not in the counts above). Tags are listed in the order
they were added to the task.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from valuerank.consensus import CONFIDENCE_SPREAD, ConsensusResult, Vote, consensus

TOP_MODELS = 3
HIGH_CONFIDENCE_AT = 0.90
MIN_VOTES = 2  # a dispute, or a confident agreement, needs two models
SCORE_DIGITS = 3


def counted(votes: Iterable[Vote]) -> list[Vote]:
    """The votes the formula counts (weight > 0)."""
    return [v for v in votes if v.weight > 0]


def top_models(votes: Iterable[Vote], limit: int = TOP_MODELS) -> list[str]:
    ranked = sorted(counted(votes), key=lambda v: (-v.mass, v.model))
    return [v.model for v in ranked[:limit]]


def is_contentious(result: ConsensusResult) -> bool:
    votes = counted(result.votes)
    if len(votes) < MIN_VOTES or not result.disagreement:
        return False
    return len({v.outcome for v in votes}) > 1 or CONFIDENCE_SPREAD in result.reasons


def is_high_confidence(result: ConsensusResult) -> bool:
    votes = counted(result.votes)
    return (
        len(votes) >= MIN_VOTES and not result.disagreement and result.score >= HIGH_CONFIDENCE_AT
    )


def consensus_dict(result: ConsensusResult) -> dict[str, Any]:
    """The seed's consensus object (score to three decimals), with why models disagree and
    how far their confidences spread."""
    return {
        "consensus": round(result.score, SCORE_DIGITS),
        "outcome": None if result.outcome is None else result.outcome.value,
        "agreement_level": result.level.value,
        "model_disagreement": result.disagreement,
        "total_validations": len(counted(result.votes)),
        "disagreement_reasons": list(result.reasons),
        "confidence_spread": result.confidence_spread,
    }


@dataclass(frozen=True)
class TagVotes:
    """A tag and its current votes (input of a task summary)."""

    id: str
    text: str
    votes: tuple[Vote, ...]


@dataclass(frozen=True)
class TagSummary:
    id: str
    text: str
    consensus: ConsensusResult
    top_models: tuple[str, ...]
    contentious: bool
    high_confidence: bool

    @classmethod
    def of(cls, tag: TagVotes) -> TagSummary:
        result = consensus(tag.votes)
        return cls(
            id=tag.id,
            text=tag.text,
            consensus=result,
            top_models=tuple(top_models(result.votes)),
            contentious=is_contentious(result),
            high_confidence=is_high_confidence(result),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "ra_tag_id": self.id,
            "ra_tag_text": self.text,
            "consensus": consensus_dict(self.consensus),
            "top_models": list(self.top_models),
        }


@dataclass(frozen=True)
class TaskSummary:
    overall: ConsensusResult
    tags: tuple[TagSummary, ...]

    @property
    def contentious_tags(self) -> list[str]:
        return [t.id for t in self.tags if t.contentious]

    @property
    def high_confidence_tags(self) -> list[str]:
        return [t.id for t in self.tags if t.high_confidence]

    def overall_dict(self) -> dict[str, Any]:
        return {
            "consensus": round(self.overall.score, SCORE_DIGITS),
            "agreement_level": self.overall.level.value,
            "total_tags": len(self.tags),
            "total_validations": len(counted(self.overall.votes)),
            "tags_with_validations": sum(1 for t in self.tags if counted(t.consensus.votes)),
        }


def summarize_task(tags: Sequence[TagVotes]) -> TaskSummary:
    summaries = tuple(TagSummary.of(t) for t in tags)
    pooled = consensus(v for t in tags for v in t.votes)
    return TaskSummary(overall=pooled, tags=summaries)
