"""A run's table written as a file: CSV, JSON Lines or Parquet, chosen by the name's extension.

The rows are streamed in (exchange/run_table.py), a batch at a time, so the memory a file
takes does not grow with the run. Parquet needs pyarrow (`pip install 'valuerank[data]'`);
its schema is the columns' types (formats/run_table.py), so a column that is null in every
row keeps its type.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

from valuerank.errors import InvalidInputError, optional_module
from valuerank.formats.run_table import ColumnType, column_type, csv_cell

TableFormat = Literal["csv", "jsonl", "parquet"]
FORMATS: dict[str, TableFormat] = {
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
}
MEDIA_TYPES: dict[TableFormat, str] = {
    "csv": "text/csv",
    "jsonl": "application/x-ndjson",
    "parquet": "application/vnd.apache.parquet",
}


class UnknownTableFormatError(InvalidInputError):
    code = "UNKNOWN_TABLE_FORMAT"


def format_of(path: Path | str) -> TableFormat:
    """The table format a file name asks for, by its extension."""
    suffix = Path(path).suffix.lower()
    found = FORMATS.get(suffix)
    if found is None:
        raise UnknownTableFormatError(
            f"cannot tell the table format of {str(path)!r} from its extension",
            hint="name the file .csv, .jsonl or .parquet",
        )
    return found


def _arrow_type(pa: Any, kind: ColumnType) -> Any:
    return {
        "str": pa.string(),
        "int": pa.int64(),
        "float": pa.float64(),
        "bool": pa.bool_(),
        "list": pa.list_(pa.string()),
    }[kind]


@dataclass(frozen=True)
class WrittenTable:
    rows: int
    columns: int


async def write_table(
    out: IO[bytes],
    fmt: TableFormat,
    columns: list[str],
    batches: AsyncIterator[list[dict[str, Any]]],
) -> WrittenTable:
    """Write the rows of `batches` (dicts with `columns`) to `out` in `fmt`."""
    rows = 0
    if fmt == "parquet":
        pa = optional_module("pyarrow", "writing Parquet")
        pq = optional_module("pyarrow.parquet", "writing Parquet")
        schema = pa.schema([(c, _arrow_type(pa, column_type(c))) for c in columns])
        with pq.ParquetWriter(out, schema) as writer:
            async for batch in batches:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                rows += len(batch)
            if rows == 0:  # the columns still, with no row
                writer.write_table(schema.empty_table())
        return WrittenTable(rows, len(columns))
    text = io.TextIOWrapper(out, encoding="utf-8", newline="", write_through=True)
    try:
        if fmt == "csv":
            writer_csv = csv.writer(text, lineterminator="\n")
            writer_csv.writerow(columns)
            async for batch in batches:
                writer_csv.writerows([[csv_cell(r[c]) for c in columns] for r in batch])
                rows += len(batch)
        else:
            async for batch in batches:
                text.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in batch))
                rows += len(batch)
        text.flush()
    finally:
        text.detach()  # leave `out` open: its owner closes it
    return WrittenTable(rows, len(columns))
