"""How the scripted personas answer a validation request (`hints["role"] == "validator"`):
deterministically, and differently per persona, so consensus and disagreement are real in
tests and demos. Pure: `validation_answer(persona, request)` returns the answer's text.

The tag to validate is `hints["ra_tag"]` (else the last user message). Each persona has a
*lean* in [-1, 1] on it, a fixed function of the persona and the tag's text:

    u(key)     = the first 8 bytes of sha256("validator\\0<key>\\0<tag text, whitespace-collapsed>")
                 as a number in [0, 1)
    lean       = clamp(direction × (2·u(key) − 1) + bias, −1, 1)
    outcome    = validated if lean > 0.2, rejected if lean < −0.2, else partial
    confidence = round(60 + 35·|lean|)                       (60..95)

| persona | key | direction | bias | so |
|---|---|---|---|---|
| utilitarian  | utilitarian  | +1    | 0    | its own hash lean |
| deontologist | deontologist | +1    | 0    | another, unrelated lean |
| contrarian   | utilitarian  | −1    | 0    | the utilitarian mirrored: rejects what it validates |
| centrist     | utilitarian  | +0.35 | 0    | the utilitarian damped: mostly partial |
| agreeable    | utilitarian  | +0.5  | +0.6 | validates unless the utilitarian doubts it most |
| neutral      | —            | 0     | 0    | always partial, confidence 60 |
| random       | random       | +1    | 0    | a lean of its own (seeded by the tag) |
| refuser      | —            | —     | —    | declines in prose: no JSON |
| rambler      | —            | —     | —    | muses in prose: no JSON |

The answer is one JSON object `{"outcome", "confidence", "notes"}`; the notes say the answer
is synthetic (`synthetic answer from scripted:<persona>`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass

from valuerank.consensus import Outcome
from valuerank.providers.base import CompletionRequest

VALIDATED_ABOVE = 0.2
MIN_CONFIDENCE, CONFIDENCE_RANGE = 60, 35


@dataclass(frozen=True)
class Stance:
    key: str | None  # None: no lean of its own (direction 0)
    direction: float = 1.0
    bias: float = 0.0
    prose: str | None = None  # answers this text instead of JSON


STANCES: Mapping[str, Stance] = {
    "utilitarian": Stance("utilitarian"),
    "deontologist": Stance("deontologist"),
    "contrarian": Stance("utilitarian", direction=-1.0),
    "centrist": Stance("utilitarian", direction=0.35),
    "agreeable": Stance("utilitarian", direction=0.5, bias=0.6),
    "neutral": Stance(None, direction=0.0),
    "random": Stance("random"),
    "refuser": Stance(None, prose="I'm sorry, but I can't judge whether this assumption holds."),
    "rambler": Stance(
        None,
        prose="Assumptions are interesting: every piece of software rests on many of them, "
        "and one could talk about them for a long time.",
    ),
}


@dataclass(frozen=True)
class ScriptedValidation:
    outcome: Outcome
    confidence: int
    lean: float


def _unit(key: str, tag: str) -> float:
    text = "\0".join(("validator", key, " ".join(tag.split())))
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") / 2.0**64


def lean(persona: str, tag: str) -> float:
    stance = STANCES[persona]
    base = 0.0 if stance.key is None else 2.0 * _unit(stance.key, tag) - 1.0
    return max(-1.0, min(1.0, stance.direction * base + stance.bias))


def scripted_validation(persona: str, tag: str) -> ScriptedValidation:
    """A persona's verdict on a tag (KeyError for an unknown persona)."""
    value = lean(persona, tag)
    if value > VALIDATED_ABOVE:
        outcome = Outcome.VALIDATED
    elif value < -VALIDATED_ABOVE:
        outcome = Outcome.REJECTED
    else:
        outcome = Outcome.PARTIAL
    return ScriptedValidation(outcome, round(MIN_CONFIDENCE + CONFIDENCE_RANGE * abs(value)), value)


_NOTES = {
    Outcome.VALIDATED: "The assumption fits the task as described.",
    Outcome.PARTIAL: "The assumption holds in part; it needs caveats the tag does not state.",
    Outcome.REJECTED: "The assumption does not hold for the task as described.",
}


def _tag_of(request: CompletionRequest) -> str:
    tag = request.hints.get("ra_tag")
    if isinstance(tag, str):
        return tag
    users = [m.content for m in request.messages if m.role == "user"]
    return users[-1] if users else ""


def validation_answer(persona: str, request: CompletionRequest, marker: str) -> str:
    """The text a persona answers a validation request with; `marker` labels it synthetic."""
    stance = STANCES[persona]
    if stance.prose is not None:
        return f"{stance.prose}\n\n{marker}"
    verdict = scripted_validation(persona, _tag_of(request))
    notes = f"{_NOTES[verdict.outcome]} {marker}"
    return json.dumps(
        {"outcome": verdict.outcome.value, "confidence": verdict.confidence, "notes": notes}
    )
