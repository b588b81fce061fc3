"""Number formats and the model × value table shared by the analysis views."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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


def grouped_table(
    title: str,
    columns: Sequence[str],
    groups: Mapping[str, Sequence[Sequence[str]]],
    *,
    caption: str | None = None,
    empty: str = "–",
) -> Table:
    """One block of rows per model (its name on the first row, a line between blocks): the
    compact layout for figures per model × value or model × dimension, which stays legible
    however many values there are (a column per value would not fit a terminal)."""
    table = Table(title=title, caption=caption)
    table.add_column("model")
    for column in columns:
        table.add_column(column, justify="left" if column in ("value", "dimension") else "right")
    for model, rows in groups.items():
        if not rows:
            table.add_row(model, empty, *([""] * (len(columns) - 1)), end_section=True)
            continue
        for k, row in enumerate(rows):
            table.add_row(model if k == 0 else "", *row, end_section=k == len(rows) - 1)
    return table
