"""Definitions of fixed scenarios (pure): a table of dilemmas read by `valuerank import
table` (formats/dilemma_table.py). Its one dimension, `Scenario`, has a level per row; the
rows, kept in the front matter under `fixed_scenarios`, give each level its text and scale
and its own levels on the table's dimensions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from valuerank.formats.definition_model import Definition
from valuerank.formats.dilemma_table import FIXED_DIMENSION, FIXED_KEY


@dataclass(frozen=True)
class FixedScenario:
    id: str
    body: str  # the text and its scale, as the model reads them
    levels: Mapping[str, int]


def fixed_scenarios(definition: Definition) -> dict[int, FixedScenario] | None:
    """Level score → its row, for a definition of fixed scenarios; None for any other."""
    rows: Any = dict(definition.extra_front_matter).get(FIXED_KEY)
    if not isinstance(rows, list) or definition.dimension(FIXED_DIMENSION) is None:
        return None
    found: dict[int, FixedScenario] = {}
    for score, row in enumerate(rows, start=1):
        if isinstance(row, Mapping):
            body = f"{str(row.get('text') or '').strip()}\n\n{str(row.get('scale') or '').strip()}"
            levels = row.get("levels") if isinstance(row.get("levels"), Mapping) else {}
            found[score] = FixedScenario(
                str(row.get("id") or ""),
                body.strip(),
                {str(k): int(v) for k, v in (levels or {}).items()},
            )
    return found


def fixed_options(
    rows: Mapping[int, FixedScenario], scores: Mapping[str, int], options: Mapping[str, str]
) -> dict[str, str]:
    """The template's options for one combination: the row's text and scale in place of
    `[Scenario]`."""
    row = rows.get(scores.get(FIXED_DIMENSION, 0))
    return {**options, FIXED_DIMENSION: row.body} if row is not None else dict(options)


def fixed_levels(rows: Mapping[int, FixedScenario], scores: Mapping[str, int]) -> dict[str, int]:
    """A combination's dimension scores: its row's own levels (the row number is no stake)."""
    row = rows.get(scores.get(FIXED_DIMENSION, 0))
    return dict(row.levels) if row is not None else {}
