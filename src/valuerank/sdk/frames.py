"""The run's table and analysis as pandas DataFrames (the `data` extra).

The same rows make the same frame whichever way they were read: each column's dtype comes
from its name (formats/run_table.py), never from the values that happen to be there, so a
column of nulls, or a run read through a server, types the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from valuerank.errors import optional_module
from valuerank.formats.run_table import column_type

if TYPE_CHECKING:
    import pandas as pd

# pandas' nullable dtypes: an integer column with a null stays integer.
_DTYPES = {"str": "string", "int": "Int64", "float": "Float64", "bool": "boolean"}

ANALYSIS_COLUMNS = [
    "model",
    "measure",
    "name",
    "value",
    "estimate",
    "ci_low",
    "ci_high",
    "p_value",
    "n",
    "status",
    "prioritized",
    "deprioritized",
    "neutral",
]


def _pandas() -> Any:
    return optional_module("pandas", "a DataFrame")


def table_frame(columns: list[str], rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The run's table, a row per transcript, typed by column (lists stay lists)."""
    pd = _pandas()
    frame = pd.DataFrame.from_records(
        [[row.get(c) for c in columns] for row in rows], columns=columns
    )
    for name in columns:
        kind = column_type(name)
        if kind == "list":
            frame[name] = frame[name].astype(object)
        else:
            frame[name] = frame[name].astype(_DTYPES[kind])
    return frame


def _interval(found: Any) -> tuple[Any, Any]:
    if isinstance(found, list | tuple) and len(found) == 2:
        return found[0], found[1]
    if isinstance(found, Mapping):
        return found.get("lower"), found.get("upper")
    return None, None


def analysis_rows(analysis: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Value sensitivities (`measure` "value_sensitivity": per model and dimension, `name`
    the dimension, `value` the value it stands for, `estimate` its coefficient) and win rates
    (`measure` "win_rate": per model and value, with the judged counts) of an analysis."""
    rows: list[dict[str, Any]] = []
    for model, dimensions in (analysis.get("valueSensitivity") or {}).items():
        for dimension, figure in (dimensions or {}).items():
            low, high = _interval(figure.get("ci95"))
            rows.append(
                {
                    "model": model,
                    "measure": "value_sensitivity",
                    "name": dimension,
                    "value": figure.get("value"),
                    "estimate": figure.get("coefficient"),
                    "ci_low": low,
                    "ci_high": high,
                    "p_value": figure.get("pValue"),
                    "n": figure.get("n"),
                    "status": figure.get("status"),
                }
            )
    for model, figures in (analysis.get("perModel") or {}).items():
        for value, figure in ((figures or {}).get("values") or {}).items():
            low, high = _interval(figure.get("confidenceInterval"))
            count = figure.get("count") or {}
            counted = [count.get(k) for k in ("prioritized", "deprioritized", "neutral")]
            rows.append(
                {
                    "model": model,
                    "measure": "win_rate",
                    "name": value,
                    "value": value,
                    "estimate": figure.get("winRate"),
                    "ci_low": low,
                    "ci_high": high,
                    "n": sum(c for c in counted[:2] if isinstance(c, int)),  # p + d
                    "prioritized": counted[0],
                    "deprioritized": counted[1],
                    "neutral": counted[2],
                }
            )
    return rows


_ANALYSIS_DTYPES = {
    "model": "string",
    "measure": "string",
    "name": "string",
    "value": "string",
    "estimate": "Float64",
    "ci_low": "Float64",
    "ci_high": "Float64",
    "p_value": "Float64",
    "n": "Int64",
    "status": "string",
    "prioritized": "Int64",
    "deprioritized": "Int64",
    "neutral": "Int64",
}


def analysis_frame(analysis: Mapping[str, Any]) -> pd.DataFrame:
    """`analysis_rows` as a DataFrame, typed by column."""
    pd = _pandas()
    rows = analysis_rows(analysis)
    frame = pd.DataFrame.from_records(
        [[row.get(c) for c in ANALYSIS_COLUMNS] for row in rows], columns=ANALYSIS_COLUMNS
    )
    return frame.astype(_ANALYSIS_DTYPES)
