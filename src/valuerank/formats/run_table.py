"""The run table's columns and their types (pure): a row per transcript, as
`valuerank export table` writes it and the Python API's dataframes hold it.

The rows themselves are read by `valuerank.exchange.run_table`; this module says what the
columns are, so a file, the API's answer and a dataframe agree on them, and how a cell is
written in CSV (which has no lists, no null and no booleans of its own).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

DIMENSION_PREFIX = "dim."
JUDGE_PREFIX = "judge."
JUDGE_FIELDS = ("decision", "prioritized", "deprioritized", "confidence")
TEXT_COLUMNS = ("answer", "turns", "rationale")
# In a CSV cell, a list's items are joined with this (value names never hold it).
LIST_SEPARATOR = ";"

# The header of the API's table export that names the columns, as a JSON list (a run without
# transcripts has no row to read them from).
COLUMNS_HEADER = "X-Table-Columns"

ColumnType = Literal["str", "int", "float", "bool", "list"]

_TYPES: dict[str, ColumnType] = {
    "run_id": "str",
    "transcript_id": "str",
    "model": "str",
    "sample_index": "int",
    "scenario_id": "str",
    "scenario": "str",
    "subject": "str",
    "phrasing": "str",
    "scale_order": "str",
    "decision": "int",
    "decision_reason": "str",
    "refusal": "bool",
    "judged": "bool",
    "consensus_prioritized": "list",
    "consensus_deprioritized": "list",
    "input_tokens": "int",
    "output_tokens": "int",
    "cost_usd": "float",
    "latency_ms": "float",
    "finish_reason": "str",
    "cached": "bool",
    "synthetic": "bool",
    "answer": "str",
    "turns": "int",
    "rationale": "str",
}
_JUDGE_TYPES: dict[str, ColumnType] = {
    "decision": "int",
    "prioritized": "list",
    "deprioritized": "list",
    "confidence": "float",
}


@dataclass(frozen=True)
class TableLayout:
    """What a run's table has columns for: its dimensions and its judges (each in
    code-point order), and whether the text columns come too."""

    dimensions: tuple[str, ...]
    judges: tuple[str, ...]
    with_text: bool = False

    def columns(self) -> list[str]:
        judged = [f"{JUDGE_PREFIX}{j}.{f}" for j in self.judges for f in JUDGE_FIELDS]
        return [
            "run_id",
            "transcript_id",
            "model",
            "sample_index",
            "scenario_id",
            "scenario",
            "subject",
            "phrasing",
            "scale_order",
            *(DIMENSION_PREFIX + d for d in self.dimensions),
            "decision",
            "decision_reason",
            "refusal",
            "judged",
            "consensus_prioritized",
            "consensus_deprioritized",
            *judged,
            "input_tokens",
            "output_tokens",
            "cost_usd",
            "latency_ms",
            "finish_reason",
            "cached",
            "synthetic",
            *(TEXT_COLUMNS if self.with_text else ()),
        ]


def column_type(name: str) -> ColumnType:
    """The type of a column of the table, from its name."""
    if name.startswith(DIMENSION_PREFIX):
        return "int"
    if name.startswith(JUDGE_PREFIX):
        return _JUDGE_TYPES[name.rsplit(".", 1)[1]]
    return _TYPES[name]


def csv_cell(value: Any) -> str:
    """A cell as CSV writes it: null empty, booleans `true`/`false`, lists joined with `;`."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return LIST_SEPARATOR.join(str(v) for v in value)
    return str(value)
