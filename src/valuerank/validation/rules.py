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
from typing import Annotated, Any

from pydantic import Field
from pydantic.dataclasses import dataclass as pydantic_dataclass

from valuerank.consensus import CONFIDENCE_SPREAD, ConsensusResult, Vote, consensus
from valuerank.consensus.consensus import AgreementLevel, Outcome
from valuerank.shapes import SHAPE, dump

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


@pydantic_dataclass(frozen=True, config=SHAPE)
class Consensus:
    """The seed's consensus object (score to three decimals), with why models disagree and
    how far their confidences spread; `no_data` (no outcome, 0.0) before any validation. An
    answer shape: the API writes it, /openapi.json documents it."""

    consensus: Annotated[float, Field(description="0..1, three decimals.")]
    outcome: Annotated[Outcome | None, Field(description="null: no data.")]
    agreement_level: AgreementLevel
    model_disagreement: bool
    total_validations: int
    disagreement_reasons: Annotated[
        list[str], Field(description="low_consensus, conflicting_outcomes, confidence_spread.")
    ]
    confidence_spread: float

    @classmethod
    def of(cls, result: ConsensusResult) -> Consensus:
        return cls(
            consensus=round(result.score, SCORE_DIGITS),
            outcome=result.outcome,
            agreement_level=result.level,
            model_disagreement=result.disagreement,
            total_validations=len(counted(result.votes)),
            disagreement_reasons=list(result.reasons),
            confidence_spread=result.confidence_spread,
        )


def consensus_dict(result: ConsensusResult) -> dict[str, Any]:
    """`Consensus.of(result)` as the API answers it."""
    answer: dict[str, Any] = dump(Consensus.of(result))
    return answer


@dataclass(frozen=True)
class TagVotes:
    """A tag and its current votes (input of a task summary)."""

    id: str
    text: str
    votes: tuple[Vote, ...]


@pydantic_dataclass(frozen=True, config=SHAPE)
class TagSummary:
    """A tag's consensus in a task's summary (an answer shape); whether it is contentious
    or held with high confidence is listed by the task, not in the tag's answer."""

    ra_tag_id: str
    ra_tag_text: str
    consensus: Consensus
    top_models: list[str]
    contentious: Annotated[bool, Field(exclude=True)]
    high_confidence: Annotated[bool, Field(exclude=True)]

    @classmethod
    def of(cls, tag: TagVotes) -> TagSummary:
        result = consensus(tag.votes)
        return cls(
            ra_tag_id=tag.id,
            ra_tag_text=tag.text,
            consensus=Consensus.of(result),
            top_models=top_models(result.votes),
            contentious=is_contentious(result),
            high_confidence=is_high_confidence(result),
        )


@dataclass(frozen=True)
class TaskSummary:
    overall: ConsensusResult
    tags: tuple[TagSummary, ...]

    @property
    def contentious_tags(self) -> list[str]:
        return [t.ra_tag_id for t in self.tags if t.contentious]

    @property
    def high_confidence_tags(self) -> list[str]:
        return [t.ra_tag_id for t in self.tags if t.high_confidence]

    def overall_dict(self) -> dict[str, Any]:
        return {
            "consensus": round(self.overall.score, SCORE_DIGITS),
            "agreement_level": self.overall.level.value,
            "total_tags": len(self.tags),
            "total_validations": len(counted(self.overall.votes)),
            "tags_with_validations": sum(1 for t in self.tags if t.consensus.total_validations),
        }


def summarize_task(tags: Sequence[TagVotes]) -> TaskSummary:
    summaries = tuple(TagSummary.of(t) for t in tags)
    pooled = consensus(v for t in tags for v in t.votes)
    return TaskSummary(overall=pooled, tags=summaries)
