"""`valuerank import table`: a table of dilemmas (CSV, JSON Lines, Parquet) stored as a
definition of fixed scenarios (formats/dilemma_table.py), all or nothing: the whole table is
read and checked before the one write that stores it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.definitions.service import StoredDefinition, checked_text, import_definition
from valuerank.errors import InvalidInputError
from valuerank.exchange.table_files import format_of
from valuerank.formats.dilemma_table import (
    DEFAULT_PREAMBLE,
    FIXED_KEY,
    TableError,
    read_rows,
    table_definition,
)


class InvalidTableError(InvalidInputError):
    """A table that is not dilemmas: `code` is the reader's (TABLE_MISSING_COLUMNS,
    TABLE_BAD_ROW, TABLE_EMPTY, …)."""

    def __init__(self, error: TableError) -> None:
        where = f"{error.source}: " if error.source else ""
        super().__init__(where + error.message, hint=error.hint)
        self.code = error.code


@dataclass(frozen=True)
class ImportedTable:
    stored: StoredDefinition
    created: bool
    scenarios: int
    dimensions: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.stored.summary(),
            "created": self.created,
            "scenarios": self.scenarios,
            "table_dimensions": self.dimensions,
        }


async def import_table(
    conn: AsyncConnection,
    org_id: str,
    data: bytes,
    *,
    file_name: str,
    name: str | None = None,
    preamble: str | None = None,
) -> ImportedTable:
    """Store the table as a new definition (named after the file unless `name`); the same
    table again is not stored twice (`created` False)."""
    fmt = format_of(file_name)
    try:
        rows = read_rows(data, fmt, source=file_name)
        definition = table_definition(
            rows,
            name=name or Path(file_name).stem,
            preamble=DEFAULT_PREAMBLE if preamble is None else preamble,
            source=file_name,
        )
    except TableError as exc:
        raise InvalidTableError(exc) from None
    stored, created = await import_definition(
        conn, org_id, checked_text(definition), source_file=Path(file_name).name
    )
    rows_kept = dict(definition.extra_front_matter)[FIXED_KEY]
    levels = sorted({d for row in rows_kept for d in row["levels"]})
    return ImportedTable(stored, created, len(rows), levels)
