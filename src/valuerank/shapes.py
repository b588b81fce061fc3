"""One definition per answer shape: the domain's own frozen dataclasses, made pydantic
dataclasses with `SHAPE`, both serialise (`dump`, for the API's answers and the CLI's
`--json`) and document (the routes name them as `response_model`, so /openapi.json is
generated from the very class that writes the JSON).

- `SHAPE` forbids fields a shape does not list (`additionalProperties: false`), so an answer
  that grows a field fails the contract tests instead of drifting from the documentation;
- a field that is the domain's and not the answer's (a report's `Run`) is
  `Field(exclude=True)`: neither dumped nor documented; what the answer shows of it is a
  `computed_field`;
- `Timestamp` writes a datetime as the API always has (ISO-8601 with `+00:00`, a naive one
  read as UTC, as SQLite hands them back), not pydantic's `Z` form.

A leaf: it imports no other part of ValueRank, so every layer may use it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import ConfigDict, PlainSerializer, TypeAdapter, WithJsonSchema

# Every field is in every answer, defaults too: the schema says so (`required`).
SHAPE = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)


def _iso(value: datetime) -> str:
    aware = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return aware.isoformat()


Timestamp = Annotated[
    datetime,
    PlainSerializer(_iso, return_type=str, when_used="json"),
    WithJsonSchema({"type": "string", "format": "date-time"}, mode="serialization"),
]


_ADAPTERS: dict[type[Any], TypeAdapter[Any]] = {}


def _adapter(kind: type[Any]) -> TypeAdapter[Any]:
    """One adapter per shape, built once (building one compiles its serialiser)."""
    if kind not in _ADAPTERS:
        _ADAPTERS[kind] = TypeAdapter(kind)
    return _ADAPTERS[kind]


def dump(value: Any) -> Any:
    """A shape (or a list of shapes) as JSON-ready values, exactly as the API answers it."""
    if isinstance(value, list):
        return [dump(item) for item in value]
    return _adapter(type(value)).dump_python(value, mode="json", by_alias=True)
