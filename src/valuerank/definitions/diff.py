"""Structured diff of two definitions (versions, forks).

`diff_definitions(before, after)` compares

* the front matter: ``name``, ``base_id``, ``category`` and every extra front-matter key
  (added / removed / changed, and a change of their order);
* the preamble and the template, as unified text diffs (`difflib`, lines without endings);
* the dimensions, matched by name case-insensitively (a change of case is reported as a
  rename): added, removed, changed (levels matched by score: added / removed / label or
  options changed), and a change of the dimensions' order (it changes scenario ids);
* the matching rules' raw text (before → after).

The result is empty (`is_empty`) exactly when ``before.to_dict() == after.to_dict()``,
for definitions whose levels are sorted by score as the model requires.
`render_diff` turns it into readable lines for the CLI.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from valuerank.formats.definition_model import Definition, Dimension, Level

__all__ = [
    "DefinitionDiff",
    "DimensionChange",
    "LevelChange",
    "TextChange",
    "ValueChange",
    "diff_definitions",
    "render_diff",
]

ChangeKind = Literal["added", "removed", "changed"]

_NO_LINE_CHANGE = "(only line endings or the final newline changed)"


@dataclass(frozen=True)
class ValueChange:
    """A changed scalar value; `before`/`after` is None when `kind` is added/removed."""

    field: str
    before: Any
    after: Any
    kind: ChangeKind = "changed"

    def to_dict(self) -> dict[str, Any]:
        return {"field": self.field, "kind": self.kind, "before": self.before, "after": self.after}


@dataclass(frozen=True)
class TextChange:
    """A changed block of text with its unified diff (`lines`, no line endings)."""

    field: str
    before: str
    after: str
    lines: tuple[str, ...]

    @classmethod
    def of(cls, field: str, before: str, after: str) -> TextChange:
        lines = tuple(
            difflib.unified_diff(
                before.splitlines(),
                after.splitlines(),
                fromfile=f"a/{field}",
                tofile=f"b/{field}",
                lineterm="",
            )
        )
        if not lines:
            lines = (f"--- a/{field}", f"+++ b/{field}", _NO_LINE_CHANGE)
        return cls(field=field, before=before, after=after, lines=lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "before": self.before,
            "after": self.after,
            "diff": list(self.lines),
        }


@dataclass(frozen=True)
class LevelChange:
    """A level present on both sides (same score) whose label or options changed."""

    score: int
    before: Level
    after: Level

    @property
    def label_changed(self) -> bool:
        return self.before.label != self.after.label

    @property
    def options_changed(self) -> bool:
        return self.before.options != self.after.options

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "label": {"before": self.before.label, "after": self.after.label},
            "options": {"before": list(self.before.options), "after": list(self.after.options)},
            "changed": [
                name
                for name, changed in (
                    ("label", self.label_changed),
                    ("options", self.options_changed),
                )
                if changed
            ],
        }


@dataclass(frozen=True)
class DimensionChange:
    """A dimension present on both sides that changed (`name_before` differs in case only)."""

    name: str
    name_before: str
    levels_added: tuple[Level, ...] = ()
    levels_removed: tuple[Level, ...] = ()
    levels_changed: tuple[LevelChange, ...] = ()

    @property
    def renamed(self) -> bool:
        return self.name != self.name_before

    @property
    def is_empty(self) -> bool:
        return not (self.renamed or self.levels_added or self.levels_removed or self.levels_changed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "name_before": self.name_before,
            "levels_added": [lv.to_dict() for lv in self.levels_added],
            "levels_removed": [lv.to_dict() for lv in self.levels_removed],
            "levels_changed": [c.to_dict() for c in self.levels_changed],
        }


@dataclass(frozen=True)
class DefinitionDiff:
    """Everything that differs between two definitions."""

    front_matter: tuple[ValueChange, ...] = ()
    preamble: TextChange | None = None
    template: TextChange | None = None
    dimensions_added: tuple[Dimension, ...] = ()
    dimensions_removed: tuple[Dimension, ...] = ()
    dimensions_changed: tuple[DimensionChange, ...] = ()
    dimension_order: ValueChange | None = None
    matching_rules: ValueChange | None = None

    @property
    def is_empty(self) -> bool:
        return not (
            self.front_matter
            or self.preamble
            or self.template
            or self.dimensions_added
            or self.dimensions_removed
            or self.dimensions_changed
            or self.dimension_order
            or self.matching_rules
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {
            "is_empty": self.is_empty,
            "front_matter": [c.to_dict() for c in self.front_matter],
            "preamble": None if self.preamble is None else self.preamble.to_dict(),
            "template": None if self.template is None else self.template.to_dict(),
            "dimensions": {
                "added": [d.to_dict() for d in self.dimensions_added],
                "removed": [d.to_dict() for d in self.dimensions_removed],
                "changed": [c.to_dict() for c in self.dimensions_changed],
                "order": None
                if self.dimension_order is None
                else {
                    "before": self.dimension_order.before,
                    "after": self.dimension_order.after,
                },
            },
            "matching_rules": None
            if self.matching_rules is None
            else {"before": self.matching_rules.before, "after": self.matching_rules.after},
        }


def _keyed(names: Sequence[Any]) -> list[tuple[Any, int]]:
    """Keys that stay unique when a value repeats: (value, occurrence number)."""
    seen: dict[Any, int] = {}
    keys = []
    for name in names:
        count = seen.get(name, 0)
        seen[name] = count + 1
        keys.append((name, count))
    return keys


def _diff_front_matter(before: Definition, after: Definition) -> list[ValueChange]:
    changes = [
        ValueChange(name, getattr(before, name), getattr(after, name))
        for name in ("name", "base_id", "category")
        if getattr(before, name) != getattr(after, name)
    ]
    old = dict(before.extra_front_matter)
    new = dict(after.extra_front_matter)
    for key, value in old.items():
        if key not in new:
            changes.append(ValueChange(key, value, None, "removed"))
        elif new[key] != value:
            changes.append(ValueChange(key, value, new[key]))
    changes += [
        ValueChange(key, None, value, "added") for key, value in new.items() if key not in old
    ]
    old_order = [k for k, _ in before.extra_front_matter if k in new]
    new_order = [k for k, _ in after.extra_front_matter if k in old]
    if old_order != new_order:
        changes.append(ValueChange("front matter order", old_order, new_order))
    return changes


def _diff_levels(before: Dimension, after: Dimension) -> DimensionChange:
    old = dict(zip(_keyed([lv.score for lv in before.levels]), before.levels, strict=True))
    new = dict(zip(_keyed([lv.score for lv in after.levels]), after.levels, strict=True))
    return DimensionChange(
        name=after.name,
        name_before=before.name,
        levels_added=tuple(lv for key, lv in new.items() if key not in old),
        levels_removed=tuple(lv for key, lv in old.items() if key not in new),
        levels_changed=tuple(
            LevelChange(lv.score, lv, new[key])
            for key, lv in old.items()
            if key in new and new[key] != lv
        ),
    )


def diff_definitions(before: Definition, after: Definition) -> DefinitionDiff:
    """What changed from `before` to `after` (see the module docstring)."""
    old_dims = dict(
        zip(_keyed([d.name.lower() for d in before.dimensions]), before.dimensions, strict=True)
    )
    new_dims = dict(
        zip(_keyed([d.name.lower() for d in after.dimensions]), after.dimensions, strict=True)
    )
    changed = [_diff_levels(dim, new_dims[key]) for key, dim in old_dims.items() if key in new_dims]
    common_old = [key for key in old_dims if key in new_dims]
    common_new = [key for key in new_dims if key in old_dims]
    order = None
    if common_old != common_new:
        order = ValueChange(
            "dimension order",
            [d.name for d in before.dimensions],
            [d.name for d in after.dimensions],
        )
    rules = None
    if before.matching_rules != after.matching_rules:
        rules = ValueChange("matching_rules", before.matching_rules, after.matching_rules)
    return DefinitionDiff(
        front_matter=tuple(_diff_front_matter(before, after)),
        preamble=None
        if before.preamble == after.preamble
        else TextChange.of("preamble", before.preamble, after.preamble),
        template=None
        if before.template == after.template
        else TextChange.of("template", before.template, after.template),
        dimensions_added=tuple(d for key, d in new_dims.items() if key not in old_dims),
        dimensions_removed=tuple(d for key, d in old_dims.items() if key not in new_dims),
        dimensions_changed=tuple(c for c in changed if not c.is_empty),
        dimension_order=order,
        matching_rules=rules,
    )


def _level_text(level: Level) -> str:
    options = ", ".join(level.options)
    return f"level {level.score} {level.label!r} (options: {options or '-'})"


def front_matter_lines(diff: DefinitionDiff) -> list[str]:
    """One line per front-matter field added, removed or changed."""
    lines: list[str] = []
    for change in diff.front_matter:
        if change.kind == "added":
            lines.append(f"{change.field}: added {change.after!r}")
        elif change.kind == "removed":
            lines.append(f"{change.field}: removed (was {change.before!r})")
        else:
            lines.append(f"{change.field}: {change.before!r} → {change.after!r}")
    return lines


def render_diff(diff: DefinitionDiff) -> list[str]:
    """Readable lines describing `diff` (``["no changes"]`` when it is empty)."""
    if diff.is_empty:
        return ["no changes"]
    lines = front_matter_lines(diff)
    for text in (diff.preamble, diff.template):
        if text is not None:
            lines.append(f"{text.field} changed:")
            lines += [f"  {line}" for line in text.lines]
    for dim in diff.dimensions_added:
        scores = ", ".join(str(lv.score) for lv in dim.levels)
        lines.append(f"dimension added: {dim.name} (levels {scores or '-'})")
    for dim in diff.dimensions_removed:
        lines.append(f"dimension removed: {dim.name}")
    for dim_change in diff.dimensions_changed:
        lines.append(f"dimension changed: {dim_change.name}")
        if dim_change.renamed:
            lines.append(f"  renamed: {dim_change.name_before} → {dim_change.name}")
        lines += [f"  added {_level_text(lv)}" for lv in dim_change.levels_added]
        lines += [f"  removed {_level_text(lv)}" for lv in dim_change.levels_removed]
        for level in dim_change.levels_changed:
            if level.label_changed:
                lines.append(
                    f"  level {level.score} label: {level.before.label!r} → {level.after.label!r}"
                )
            if level.options_changed:
                lines.append(
                    f"  level {level.score} options: {list(level.before.options)!r} → "
                    f"{list(level.after.options)!r}"
                )
    if diff.dimension_order is not None:
        lines.append(
            "dimension order: "
            f"{', '.join(diff.dimension_order.before)} → {', '.join(diff.dimension_order.after)}"
        )
    if diff.matching_rules is not None:
        lines.append("matching rules changed:")
        text = TextChange.of(
            "matching_rules",
            diff.matching_rules.before or "",
            diff.matching_rules.after or "",
        )
        if diff.matching_rules.before is None:
            lines.append("  (section added)")
        elif diff.matching_rules.after is None:
            lines.append("  (section removed)")
        lines += [f"  {line}" for line in text.lines]
    return lines
