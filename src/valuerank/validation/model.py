"""What the validation API stores and shows: tasks, RA tags, validations. Pure: the checks of
what users send, and the JSON shapes of the seed document (answer shapes, `valuerank.shapes`:
the API, its events and the CLI's --json write them, /openapi.json documents them)."""

from __future__ import annotations

import re
import secrets
from typing import Annotated

from pydantic import Field, PlainSerializer, WithJsonSchema, computed_field
from pydantic.dataclasses import dataclass

from valuerank.consensus import Outcome, Vote
from valuerank.errors import InvalidInputError
from valuerank.shapes import SHAPE, Timestamp
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


# A confidence as the seed shows it: 88.0 is written 88 (`number`), a number either way.
Confidence = Annotated[
    float,
    PlainSerializer(number),
    WithJsonSchema({"type": "number", "description": "0..100."}, mode="serialization"),
]


@dataclass(frozen=True, config=SHAPE)
class Task:
    id: int
    name: str
    description: str
    tag_count: int
    created_at: Timestamp
    org_id: Annotated[str, Field(exclude=True)]
    version: Annotated[int, Field(exclude=True)]


@dataclass(frozen=True, config=SHAPE)
class RaTag:
    task_id: int
    id: str
    text: str
    position: int
    created_at: Timestamp

    @computed_field(  # type: ignore[prop-decorator]
        description="e.g. COMPLETION_DRIVE_IMPL (from `#TYPE:`)."
    )
    @property
    def tag_type(self) -> str | None:
        return tag_type(self.text)


@dataclass(frozen=True, config=SHAPE)
class ValidatorInfo:
    """The validator's registry entry as validations show it (None fields: not registered);
    the `model` of a validation's event."""

    id: str | None
    provider: str | None
    display_name: Annotated[str | None, Field(serialization_alias="name")]
    version: str | None
    category: str | None
    weight: float


@dataclass(frozen=True, config=SHAPE)
class Validation:
    """The seed's validation object, plus `source` and the model's weight."""

    id: int
    task_id: int
    ra_tag_id: str
    outcome: Outcome
    confidence: Confidence
    validator_id: str
    notes: str
    validated_at: Timestamp
    source: Annotated[str, Field(description="How it was recorded: api, model…")]
    model: Annotated[ValidatorInfo, Field(exclude=True)]

    def vote(self) -> Vote:
        """The validation as a consensus vote (ValueError/TypeError for unusable data)."""
        return Vote(self.validator_id, self.outcome, self.confidence, self.model.weight)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def model_name(self) -> str | None:
        return self.model.display_name

    @computed_field  # type: ignore[prop-decorator]
    @property
    def model_version(self) -> str | None:
        return self.model.version

    @computed_field  # type: ignore[prop-decorator]
    @property
    def model_category(self) -> str | None:
        return self.model.category

    @computed_field  # type: ignore[prop-decorator]
    @property
    def model_weight(self) -> float:
        return self.model.weight
