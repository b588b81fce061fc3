"""The in-memory model of a scenario definition (the CLI's `exp-*.md`).

Shared by the markdown parser/serializer, expansion, diff and storage (as JSON).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DEFAULT_BASE_ID = "scenario_001"


@dataclass(frozen=True)
class Level:
    """One scored level of a dimension: `| Score | Label | Options |`."""

    score: int
    label: str
    options: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"score": self.score, "label": self.label, "options": list(self.options)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Level:
        return cls(
            score=int(data["score"]),
            label=str(data["label"]),
            options=tuple(str(o) for o in data.get("options", [])),
        )


@dataclass(frozen=True)
class Dimension:
    """A named dimension; its levels are sorted by score, scores > 0 only."""

    name: str
    levels: tuple[Level, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "levels": [lv.to_dict() for lv in self.levels]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Dimension:
        return cls(
            name=str(data["name"]),
            levels=tuple(Level.from_dict(lv) for lv in data.get("levels", [])),
        )


@dataclass(frozen=True)
class Definition:
    """A scenario definition: front matter, preamble, template, dimensions, matching rules.

    `matching_rules` is the raw text of the `# Matching Rules` section (None when absent);
    `definitions.rules` interprets it. `extra_front_matter` keeps front-matter keys the CLI
    does not know, in file order, so a round trip loses nothing.
    """

    name: str
    template: str
    dimensions: tuple[Dimension, ...]
    base_id: str = DEFAULT_BASE_ID
    category: str = ""
    preamble: str = ""
    matching_rules: str | None = None
    extra_front_matter: tuple[tuple[str, Any], ...] = field(default=())

    def dimension(self, name: str) -> Dimension | None:
        """The dimension called `name` (case-insensitive), or None."""
        lowered = name.lower()
        for dim in self.dimensions:
            if dim.name.lower() == lowered:
                return dim
        return None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form, used as the stored `content` of a definition version."""
        return {
            "name": self.name,
            "base_id": self.base_id,
            "category": self.category,
            "preamble": self.preamble,
            "template": self.template,
            "dimensions": [d.to_dict() for d in self.dimensions],
            "matching_rules": self.matching_rules,
            "extra_front_matter": [[k, v] for k, v in self.extra_front_matter],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Definition:
        return cls(
            name=str(data["name"]),
            base_id=str(data.get("base_id") or DEFAULT_BASE_ID),
            category=str(data.get("category") or ""),
            preamble=str(data.get("preamble") or ""),
            template=str(data["template"]),
            dimensions=tuple(Dimension.from_dict(d) for d in data.get("dimensions", [])),
            matching_rules=data.get("matching_rules"),
            extra_front_matter=tuple((str(k), v) for k, v in data.get("extra_front_matter", [])),
        )
