"""The in-memory model of a generated scenarios file (the CLI's `exp-NNN.*.yaml`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

# Keys every scenario of the CLI has, in the order the CLI writes them.
CORE_SCENARIO_KEYS = ("base_id", "category", "subject", "body")


@dataclass(frozen=True)
class Scenario:
    """One scenario variant.

    `extra` holds every other per-scenario key (`status`, `runs`, `preference_frame`, …)
    as (key, value) pairs so unknown keys survive a round trip. `key_order` remembers the
    order the keys had in the file; it does not take part in equality.
    """

    id: str
    base_id: str
    category: str
    subject: str
    body: str
    extra: tuple[tuple[str, Any], ...] = ()
    key_order: tuple[str, ...] = field(default=(), compare=False)

    @property
    def status(self) -> str | None:
        value = dict(self.extra).get("status")
        return None if value is None else str(value)

    def to_mapping(self) -> dict[str, Any]:
        """The scenario's keys and values in file order (CLI order when unknown)."""
        values: dict[str, Any] = {
            "base_id": self.base_id,
            "category": self.category,
            "subject": self.subject,
            "body": self.body,
        }
        values.update(self.extra)
        order = [k for k in self.key_order if k in values]
        order += [k for k in values if k not in order]
        return {k: values[k] for k in order}


@dataclass(frozen=True)
class ScenarioFile:
    """A whole scenarios file.

    `layout` is "modern" (`preamble` + `scenarios:` map) or "legacy" (top-level
    `scenario_*` keys next to `version`, `preamble`, `followups`, `golden_runs`).
    `extra_top_level` keeps any other top-level keys (in file order).
    """

    preamble: str
    scenarios: tuple[Scenario, ...]
    layout: Literal["modern", "legacy"] = "modern"
    version: Any = None
    followups: tuple[tuple[str, str], ...] = ()
    golden_runs: tuple[tuple[str, Any], ...] = ()
    extra_top_level: tuple[tuple[str, Any], ...] = ()
    header_comment: str | None = field(default=None, compare=False)
    # Order of the top-level keys in the file (legacy: scenario ids included), so writing
    # the file back keeps its layout. Like `key_order`, it does not take part in equality.
    top_level_order: tuple[str, ...] = field(default=(), compare=False)

    def scenario(self, scenario_id: str) -> Scenario | None:
        for sc in self.scenarios:
            if sc.id == scenario_id:
                return sc
        return None
