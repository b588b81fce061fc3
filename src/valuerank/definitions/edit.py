"""Definitions written as fields (the API's JSON) instead of a file, and fork changes (pure).

A definition given as fields must be one the CLI's `.md` can hold: the service writes it as
the file, parses the file back (the same checks as an import) and compares. Anything the
format cannot carry — an option holding a comma, a label holding a newline — is refused
with the field named, instead of being stored differently from what was sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from valuerank.errors import InvalidInputError
from valuerank.formats.definition_model import DEFAULT_BASE_ID, Definition, Dimension, Level

# The fields of a definition that a client may give or change.
EDITABLE_FIELDS = (
    "name",
    "base_id",
    "category",
    "preamble",
    "template",
    "dimensions",
    "matching_rules",
)


def _level(data: Mapping[str, Any]) -> Level:
    """A level; without options its label is its one option, as the CLI's file writes it."""
    label = str(data["label"]).strip()
    options = tuple(str(o).strip() for o in data.get("options", []) or [])
    return Level(score=int(data["score"]), label=label, options=options or (label,))


def definition_from_fields(fields: Mapping[str, Any]) -> Definition:
    """A definition from plain values (as `Definition.to_dict` writes them); text fields are
    stripped as the file format strips them, and levels sorted by score as it sorts them."""
    unknown = sorted(set(fields) - set(EDITABLE_FIELDS) - {"extra_front_matter"})
    if unknown:
        raise InvalidInputError(
            f"unknown definition field(s): {', '.join(unknown)}",
            hint=f"the fields are {', '.join(EDITABLE_FIELDS)}",
        )
    rules = fields.get("matching_rules")
    dimensions = tuple(
        Dimension(
            name=str(d["name"]).strip(),
            levels=tuple(
                sorted(
                    (_level(lv) for lv in d.get("levels", [])),
                    key=lambda level: level.score,
                )
            ),
        )
        for d in fields.get("dimensions", [])
    )
    return Definition(
        name=str(fields.get("name", "")).strip(),
        base_id=str(fields.get("base_id") or DEFAULT_BASE_ID).strip(),
        category=str(fields.get("category") or "").strip(),
        preamble=str(fields.get("preamble") or "").strip(),
        template=str(fields.get("template", "")).strip(),
        dimensions=dimensions,
        matching_rules=None if rules is None or not str(rules).strip() else str(rules).strip(),
        extra_front_matter=tuple(
            (str(k), v) for k, v in fields.get("extra_front_matter", []) or []
        ),
    )


def with_changes(parent: Definition, changes: Mapping[str, Any]) -> Definition:
    """The parent's content with the given fields replaced (a fork's new content)."""
    if not changes:
        raise InvalidInputError(
            "no changes given", hint=f"change one of: {', '.join(EDITABLE_FIELDS)}"
        )
    return definition_from_fields({**parent.to_dict(), **changes})


def _normal_text(text: str | None) -> str:
    return (text or "").strip()


def first_difference(wanted: Definition, stored: Definition) -> str | None:
    """The first field where `stored` (the file parsed back) differs from `wanted`, or None."""
    for field in ("name", "base_id", "category"):
        if getattr(wanted, field) != getattr(stored, field):
            return field
    for field in ("preamble", "template", "matching_rules"):
        if _normal_text(getattr(wanted, field)) != _normal_text(getattr(stored, field)):
            return field
    if len(wanted.dimensions) != len(stored.dimensions):
        return "dimensions"
    for i, (a, b) in enumerate(zip(wanted.dimensions, stored.dimensions, strict=True)):
        if a.name != b.name or len(a.levels) != len(b.levels):
            return f"dimensions[{i}]"
        for j, (la, lb) in enumerate(zip(a.levels, b.levels, strict=True)):
            if la != lb:
                return f"dimensions[{i}].levels[{j}]"
    return None


def check_representable(wanted: Definition, stored: Definition) -> None:
    """INVALID_INPUT naming the field the CLI's file format cannot hold as it was given."""
    field = first_difference(wanted, stored)
    if field is not None:
        raise InvalidInputError(
            f"{field} cannot be written in the CLI's definition format as given",
            hint="options are separated by commas and a label is one line: an option cannot "
            "hold a comma, a label or option cannot hold a newline or a leading '#'",
        )
