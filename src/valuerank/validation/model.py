"""What the validation API stores and shows: tasks, RA tags, validations. Pure: the checks of
what users send, and the JSON shapes of the seed document."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from valuerank.consensus import Outcome, Vote
from valuerank.errors import InvalidInputError
from valuerank.queue.dialect import iso
from valuerank.validation.errors import InvalidTaskIdError

MAX_TASK_ID = 2**63 - 1  # a PostgreSQL BIGINT
MAX_NAME = 300
MAX_DESCRIPTION = 10_000
MAX_TAG_TEXT = 2_000
MAX_NOTES = 4_000
MAX_VALIDATOR_ID = 300
TAG_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$")
# A task id as the API documents it: a positive integer without leading zeros, of at most
# 18 digits (so it always fits a PostgreSQL BIGINT).
TASK_ID_PATTERN = r"^[1-9][0-9]{0,17}$"
# `#COMPLETION_DRIVE_IMPL: Using JWT tokens…` → the tag's type, COMPLETION_DRIVE_IMPL.
_TAG_TYPE = re.compile(r"^#([A-Z][A-Z0-9_]*)\s*:")


def parse_task_id(text: str | int, *, exact: bool = False) -> int:
    """A task id from a path or a command line: a positive integer (INVALID_TASK_ID if not).
    `exact`: the text must match TASK_ID_PATTERN as it is (a command line's may be padded)."""
    value = str(text) if exact else str(text).strip()
    if not re.fullmatch(TASK_ID_PATTERN, value) or int(value) > MAX_TASK_ID:
        raise InvalidTaskIdError(
            f"invalid task id {value[:40]!r}", hint="task ids are positive integers, e.g. 123"
        )
    return int(value)


def new_tag_id() -> str:
    return f"ra_{secrets.token_hex(6)}"


def check_tag_id(tag_id: str | None) -> str:
    """The id a client chose for a tag (a fresh `ra_…` one when None)."""
    if tag_id is None:
        return new_tag_id()
    if not TAG_ID.match(tag_id):
        raise InvalidInputError(
            f"invalid RA tag id {tag_id[:120]!r}",
            hint="1-100 characters: letters, digits and _ . : - (starting with a letter or "
            "digit), e.g. ra_tag_abc123; or leave it out to get one",
        )
    return tag_id


def check_outcome(value: str) -> Outcome:
    try:
        return Outcome(value.strip().lower())
    except ValueError:
        raise InvalidInputError(
            f"invalid outcome {value[:40]!r}", hint="one of validated, partial, rejected"
        ) from None


def check_confidence(value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 100:
        raise InvalidInputError(f"confidence must be a number 0..100, got {value!r}")
    return float(value)


def tag_type(text: str) -> str | None:
    found = _TAG_TYPE.match(text.strip())
    return found.group(1) if found else None


def number(value: float) -> float | int:
    """88.0 → 88: confidences show as the integers they usually are."""
    return int(value) if float(value).is_integer() else value


@dataclass(frozen=True)
class Task:
    id: int
    org_id: str
    name: str
    description: str
    version: int
    created_at: datetime
    tag_count: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "tag_count": self.tag_count,
            "created_at": iso(self.created_at),
        }


@dataclass(frozen=True)
class RaTag:
    task_id: int
    id: str
    text: str
    position: int
    created_at: datetime

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "id": self.id,
            "text": self.text,
            "tag_type": tag_type(self.text),
            "position": self.position,
            "created_at": iso(self.created_at),
        }


@dataclass(frozen=True)
class ValidatorModel:
    """The validator's registry entry as validations show it (None fields: not registered)."""

    id: str | None
    provider: str | None
    display_name: str | None
    version: str | None
    category: str | None
    weight: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "provider": self.provider,
            "name": self.display_name,
            "version": self.version,
            "category": self.category,
            "weight": self.weight,
        }


@dataclass(frozen=True)
class Validation:
    id: int
    task_id: int
    ra_tag_id: str
    validator_id: str
    outcome: Outcome
    confidence: float
    notes: str
    validated_at: datetime
    source: str
    model: ValidatorModel

    def vote(self) -> Vote:
        """The validation as a consensus vote (ValueError/TypeError for unusable data)."""
        return Vote(self.validator_id, self.outcome, self.confidence, self.model.weight)

    def to_dict(self) -> dict[str, Any]:
        """The seed's validation object, plus `source` and the model's weight."""
        return {
            "id": self.id,
            "task_id": self.task_id,
            "ra_tag_id": self.ra_tag_id,
            "outcome": self.outcome.value,
            "confidence": number(self.confidence),
            "validator_id": self.validator_id,
            "notes": self.notes,
            "validated_at": iso(self.validated_at),
            "model_name": self.model.display_name,
            "model_version": self.model.version,
            "model_category": self.model.category,
            "model_weight": self.model.weight,
            "source": self.source,
        }
