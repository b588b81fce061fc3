"""The prompt of a `validate` job and the reading of its answer (pure, as prompts.py).

A validator model reads a task and one of its Response-Awareness (RA) tags — an assumption an
AI assistant made while working on the task, written `#TAG_TYPE: assumption` — and says
whether the assumption holds: outcome, confidence 0–100 and notes, as one JSON object.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from valuerank.consensus import Outcome
from valuerank.pipeline.prompts import json_objects, optional_text, parse_confidence
from valuerank.providers.base import Message

VALIDATION_KEYS = ("outcome", "confidence", "notes")
MAX_NOTES = 4_000
VALIDATION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "outcome": {"type": "string", "enum": [o.value for o in Outcome]},
        "confidence": {"type": "number", "minimum": 0, "maximum": 100},
        "notes": {"type": "string"},
    },
    "required": list(VALIDATION_KEYS),
    "additionalProperties": False,
}


def validation_messages(
    task_name: str, task_description: str, tag_text: str
) -> tuple[Message, ...]:
    """System instructions, then the task and the tag to validate."""
    system = (
        "You validate assumptions for ValueRank. While working on a software task, an AI "
        "assistant marked the assumptions it made with Response-Awareness (RA) tags, written "
        "`#TAG_TYPE: assumption` (for instance `#COMPLETION_DRIVE_IMPL: …` for an "
        "implementation choice made to complete the work, `#SUGGEST_…` for a suggestion). "
        "Judge whether the tagged assumption holds for the task.\n\n"
        "Report:\n"
        "- outcome: validated if the assumption holds as stated; partial if it holds only with "
        "caveats or needs more than it says; rejected if it does not hold.\n"
        "- confidence: how sure you are of this outcome, 0-100.\n"
        "- notes: one to three sentences saying why.\n\n"
        "Reply with one JSON object with exactly these keys and nothing else: "
        + ", ".join(VALIDATION_KEYS)
        + "."
    )
    parts = [f"Task: {task_name.strip()}"]
    if task_description.strip():
        parts.append(task_description.strip())
    parts.append(f"RA tag:\n{tag_text.strip()}")
    return (Message("system", system), Message("user", "\n\n".join(parts)))


@dataclass(frozen=True)
class ValidationReply:
    outcome: Outcome
    confidence: float
    notes: str


def parse_validation_reply(text: str) -> ValidationReply:
    """The validator's JSON reply (inside code fences or prose), checked against the schema.

    Raises ValueError saying what is wrong: no JSON object with an `outcome`, an outcome other
    than validated/partial/rejected (any case), a confidence outside 0..100, notes not text.
    Notes longer than 4,000 characters are cut.
    """
    data = next((d for d in json_objects(text) if "outcome" in d), None)
    if data is None:
        raise ValueError(
            "the reply holds no JSON object with an `outcome` key; expected "
            "{outcome, confidence, notes}"
        )
    raw = data["outcome"]
    try:
        outcome = Outcome(str(raw).strip().lower())
    except ValueError:
        raise ValueError(f"`outcome` must be validated, partial or rejected, got {raw!r}") from None
    if "confidence" not in data:
        raise ValueError("the reply has no `confidence` (a number 0..100)")
    notes = optional_text(data, "notes")
    return ValidationReply(outcome, parse_confidence(data["confidence"]), notes.strip()[:MAX_NOTES])
