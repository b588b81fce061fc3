"""Number formats and the model × value table shared by the analysis views."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.table import Table


def num(value: Any, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def p_text(value: Any) -> str:
    if value is None:
        return "–"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def interval_text(entry: Any) -> str:
    """`[lower, upper]` of an interval given as {lower, upper, …} or a pair; "" if none."""
    if not entry:
        return ""
    if isinstance(entry, Mapping):
        lower, upper = entry.get("lower"), entry.get("upper")
    else:
        lower, upper = entry[0], entry[1]
    if lower is None or upper is None:
        return ""
    return f"[{lower:.2f}, {upper:.2f}]"


def value_matrix(
    title: str, rows: Mapping[str, Mapping[str, str]], *, caption: str | None = None
) -> Table:
    """One row per model, one column per value (every value any model has), "–" where a
    model has no figure for it."""
    values = sorted({v for cells in rows.values() for v in cells})
    table = Table(title=title, caption=caption)
    table.add_column("model")
    for value in values:
        table.add_column(value, justify="right")
    for model, cells in rows.items():
        table.add_row(model, *(cells.get(v, "–") for v in values))
    return table
