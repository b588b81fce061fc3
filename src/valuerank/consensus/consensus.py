"""Multi-model consensus: one formula, written once (docs/architecture.md, "Scoring").

Each vote has an outcome (validated 1.0, partial 0.5, rejected 0.0), the voter's
confidence c (0–100, used as c/100) and the model's weight w:

    consensus = Σ wᵢ·cᵢ·oᵢ / Σ wᵢ·cᵢ

STRONG at ≥ 0.80, MODERATE at ≥ 0.60, WEAK below; `no_data` (score 0.0) when there are no
votes or Σ wᵢ·cᵢ = 0. `model_disagreement` is true when the score is below 0.75, or both
validated and rejected occur, or the confidence spread (max − min) exceeds 30 points.
Votes of weight 0 count for nothing, not even for disagreement. `no_data` never reports a
disagreement (there is nothing yet to disagree about).

Arithmetic is exact (fractions of the values' decimal forms), so a score of exactly 0.8
is STRONG and confidences 70.1 and 40.1 are 30 points apart, not 30.000000000000004.

`decision_consensus` applies the same formula to judges reading one transcript; see there.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from typing import Any


class Outcome(StrEnum):
    VALIDATED = "validated"
    PARTIAL = "partial"
    REJECTED = "rejected"


class AgreementLevel(StrEnum):
    STRONG = "STRONG"
    MODERATE = "MODERATE"
    WEAK = "WEAK"
    NO_DATA = "no_data"


OUTCOME_WEIGHTS: dict[Outcome, float] = {
    Outcome.VALIDATED: 1.0,
    Outcome.PARTIAL: 0.5,
    Outcome.REJECTED: 0.0,
}
STRONG_AT = 0.80
MODERATE_AT = 0.60
DISAGREEMENT_BELOW = 0.75
MAX_CONFIDENCE_SPREAD = 30.0

# Why `model_disagreement` is true (the codes in `ConsensusResult.reasons`).
LOW_CONSENSUS = "low_consensus"
CONFLICTING_OUTCOMES = "conflicting_outcomes"
CONFIDENCE_SPREAD = "confidence_spread"


@functools.lru_cache(maxsize=4096)
def _exact(value: float) -> Fraction:
    """The decimal a float prints as (0.9 -> 9/10), so sums and thresholds are exact. Kept:
    the thresholds, weights and confidences repeat, and parsing the decimal is most of what
    a validation read computes."""
    return Fraction(repr(float(value)))


def _check_number(name: str, value: float, low: float, high: float | None) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number, not {type(value).__name__}")
    if not math.isfinite(value) or value < low or (high is not None and value > high):
        bounds = f"{low}..{high}" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be a finite number {bounds}, got {value!r}")


@dataclass(frozen=True)
class Vote:
    """One model's verdict. `confidence` is 0–100; `weight` (≥ 0) is the model's weight."""

    model: str
    outcome: Outcome
    confidence: float
    weight: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "outcome", Outcome(self.outcome))
        _check_number("confidence", self.confidence, 0.0, 100.0)
        _check_number("weight", self.weight, 0.0, None)

    @functools.cached_property
    def mass(self) -> Fraction:
        """wᵢ·cᵢ, exactly (computed once: exact arithmetic is not cheap)."""
        return _exact(self.weight) * _exact(self.confidence) / 100

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "outcome": self.outcome.value,
            "confidence": self.confidence,
            "weight": self.weight,
        }


@dataclass(frozen=True)
class ConsensusResult:
    """The consensus of some votes.

    `outcome` is the outcome with the most weight (Σ w·c) behind it, `partial` when two
    outcomes tie for the most, None without data. `reasons` lists why `disagreement` is
    true (`low_consensus`, `conflicting_outcomes`, `confidence_spread`).
    """

    score: float
    level: AgreementLevel
    disagreement: bool
    votes: tuple[Vote, ...]
    reasons: tuple[str, ...] = ()
    outcome: Outcome | None = None
    confidence_spread: float = 0.0

    @property
    def total(self) -> int:
        return len(self.votes)

    def to_dict(self) -> dict[str, Any]:
        """The seed API's `consensus` object, plus the reasons, spread and votes."""
        return {
            "consensus": self.score,
            "outcome": None if self.outcome is None else self.outcome.value,
            "agreement_level": self.level.value,
            "model_disagreement": self.disagreement,
            "total_validations": self.total,
            "disagreement_reasons": list(self.reasons),
            "confidence_spread": self.confidence_spread,
            "votes": [vote.to_dict() for vote in self.votes],
        }


def agreement_level(score: float) -> AgreementLevel:
    """STRONG ≥ 0.80, MODERATE ≥ 0.60, WEAK below (exact decimal comparison)."""
    return _level(_exact(score))


def _level(score: Fraction) -> AgreementLevel:
    if score >= _exact(STRONG_AT):
        return AgreementLevel.STRONG
    if score >= _exact(MODERATE_AT):
        return AgreementLevel.MODERATE
    return AgreementLevel.WEAK


def consensus(votes: Iterable[Vote]) -> ConsensusResult:
    """The weighted consensus of `votes` (see the module docstring for the formula)."""
    all_votes = tuple(votes)
    counted = [v for v in all_votes if v.weight > 0]
    # One exact sum per outcome; the total and the weighted sum follow from them (exact
    # arithmetic: the same figures as summing vote by vote, at a third of the cost).
    support = dict.fromkeys(Outcome, Fraction(0))
    for v in counted:
        support[v.outcome] += v.mass
    total = sum(support.values(), Fraction(0))
    if total == 0:
        return ConsensusResult(0.0, AgreementLevel.NO_DATA, False, all_votes)
    weighted = sum((mass * _exact(OUTCOME_WEIGHTS[o]) for o, mass in support.items()), Fraction(0))
    score = weighted / total
    confidences = [_exact(v.confidence) for v in counted]
    spread = max(confidences) - min(confidences)
    outcomes = {v.outcome for v in counted}
    reasons: list[str] = []
    if score < _exact(DISAGREEMENT_BELOW):
        reasons.append(LOW_CONSENSUS)
    if Outcome.VALIDATED in outcomes and Outcome.REJECTED in outcomes:
        reasons.append(CONFLICTING_OUTCOMES)
    if spread > _exact(MAX_CONFIDENCE_SPREAD):
        reasons.append(CONFIDENCE_SPREAD)
    best = max(support.values())
    leaders = [o for o in Outcome if support[o] == best]
    return ConsensusResult(
        score=float(score),
        level=_level(score),
        disagreement=bool(reasons),
        votes=all_votes,
        reasons=tuple(reasons),
        outcome=leaders[0] if len(leaders) == 1 else Outcome.PARTIAL,
        confidence_spread=float(spread),
    )


# --- judges of one transcript -------------------------------------------------------------


@dataclass(frozen=True)
class Judgement:
    """One judge's reading of a transcript: the decision (1–5 or None), values, confidence."""

    model: str
    decision: int | None
    confidence: float
    weight: float = 1.0
    prioritized_values: tuple[str, ...] = ()
    deprioritized_values: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        d = self.decision
        if d is not None and (isinstance(d, bool) or not isinstance(d, int) or not 1 <= d <= 5):
            raise ValueError(f"decision must be an integer 1..5 or None, got {d!r}")
        _check_number("confidence", self.confidence, 0.0, 100.0)
        _check_number("weight", self.weight, 0.0, None)
        object.__setattr__(self, "prioritized_values", tuple(self.prioritized_values))
        object.__setattr__(self, "deprioritized_values", tuple(self.deprioritized_values))

    @property
    def mass(self) -> Fraction:
        return _exact(self.weight) * _exact(self.confidence) / 100


@dataclass(frozen=True)
class DecisionConsensus:
    """What the judges agree on.

    `decision` is the agreed code (None when the judges' weight mostly says there is none,
    or there is no weight at all); `split` is true when the weighted median fell exactly
    between two codes and the tie-break chose one. `*_values` are the values named by
    judges holding more than half of the total weight (w·c); `*_union` every value named.
    """

    decision: int | None
    consensus: ConsensusResult
    prioritized_values: tuple[str, ...]
    deprioritized_values: tuple[str, ...]
    prioritized_union: tuple[str, ...]
    deprioritized_union: tuple[str, ...]
    split: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "decision": self.decision,
            "split": self.split,
            "consensus": self.consensus.to_dict(),
            "prioritized_values": list(self.prioritized_values),
            "deprioritized_values": list(self.deprioritized_values),
            "prioritized_union": list(self.prioritized_union),
            "deprioritized_union": list(self.deprioritized_union),
        }


def _weighted_median(masses: dict[int, Fraction]) -> tuple[int, bool]:
    """The weighted median code and whether a tie-break chose between two medians.

    Lower median L: the smallest code with at least half the weight at or below it; upper
    median U: the largest with at least half at or above it. L == U in most cases; else
    the weight sits exactly half on each side and the code with more weight of its own
    wins, then the one nearer the neutral 3, then the lower.
    """
    codes = sorted(c for c, m in masses.items() if m > 0)
    half = sum(masses.values(), Fraction(0)) / 2
    lower = next(c for c in codes if sum(masses[d] for d in codes if d <= c) >= half)
    upper = next(c for c in reversed(codes) if sum(masses[d] for d in codes if d >= c) >= half)
    if lower == upper:
        return lower, False
    chosen = min((lower, upper), key=lambda c: (-masses[c], abs(c - 3), c))
    return chosen, True


def _outcome(judged: int | None, agreed: int | None) -> Outcome:
    if judged == agreed:
        return Outcome.VALIDATED
    if judged is not None and agreed is not None and abs(judged - agreed) == 1:
        return Outcome.PARTIAL
    return Outcome.REJECTED


def _values(
    judgements: Sequence[Judgement], pick: str, total: Fraction
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    support: dict[str, Fraction] = {}
    for judgement in judgements:
        for name in dict.fromkeys(getattr(judgement, pick)):
            support[name] = support.get(name, Fraction(0)) + judgement.mass
    union = tuple(support)
    order = {name: i for i, name in enumerate(union)}
    majority = sorted(
        (n for n, s in support.items() if total > 0 and s > total / 2),
        key=lambda n: (-support[n], order[n]),
    )
    return tuple(majority), union


def decision_consensus(judgements: Iterable[Judgement]) -> DecisionConsensus:
    """Agree on a transcript's decision code and say how strongly the judges agree.

    The agreed decision is the **weighted median** (weights w·c) of the judges' codes, not
    the mode: the scale is ordinal, and the median is the code nearest to all judges (it
    minimises the weighted distance), which fits outcomes that score the distance. A
    judge answering None ("no decision in this answer") votes for None; None is agreed
    when it has more weight than all codes together. Each judge's vote is then
    validated (same as agreed), partial (off by one) or rejected, and `consensus` turns the
    votes into a score, a level and the disagreement flag.
    """
    judged = tuple(judgements)
    numeric: dict[int, Fraction] = {}
    none_mass = Fraction(0)
    for j in judged:
        if j.weight <= 0:
            continue
        if j.decision is None:
            none_mass += j.mass
        else:
            numeric[j.decision] = numeric.get(j.decision, Fraction(0)) + j.mass
    numeric_mass = sum(numeric.values(), Fraction(0))
    agreed: int | None = None
    split = False
    if numeric_mass > 0 and numeric_mass >= none_mass:
        agreed, split = _weighted_median(numeric)
    votes = [Vote(j.model, _outcome(j.decision, agreed), j.confidence, j.weight) for j in judged]
    total = numeric_mass + none_mass
    prioritized, prioritized_union = _values(judged, "prioritized_values", total)
    deprioritized, deprioritized_union = _values(judged, "deprioritized_values", total)
    return DecisionConsensus(
        decision=agreed,
        consensus=consensus(votes),
        prioritized_values=prioritized,
        deprioritized_values=deprioritized,
        prioritized_union=prioritized_union,
        deprioritized_union=deprioritized_union,
        split=split,
    )


__all__ = [
    "CONFIDENCE_SPREAD",
    "CONFLICTING_OUTCOMES",
    "DISAGREEMENT_BELOW",
    "LOW_CONSENSUS",
    "MAX_CONFIDENCE_SPREAD",
    "MODERATE_AT",
    "OUTCOME_WEIGHTS",
    "STRONG_AT",
    "AgreementLevel",
    "ConsensusResult",
    "DecisionConsensus",
    "Judgement",
    "Outcome",
    "Vote",
    "agreement_level",
    "consensus",
    "decision_consensus",
]
