"""Finding runs: the organisation's runs filtered by status, definition, model and creation
time, newest first, one keyset page at a time (the API's list and the CLI's)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Select, exists, func, literal, select, type_coerce
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from valuerank.db.tables import runs
from valuerank.definitions.service import get_definition
from valuerank.errors import InvalidInputError
from valuerank.findings.keyset import newest_first
from valuerank.queue.dialect import to_db
from valuerank.runs.run import Run, run_from_row
from valuerank.runs.states import RunStatus


@dataclass(frozen=True)
class RunFilter:
    """Which runs to list; None: any. Times are inclusive bounds on `created_at`; a naive
    time is taken as UTC."""

    status: RunStatus | None = None
    definition_id: str | None = None
    model: str | None = None  # a target model of the run (`provider:model`)
    created_since: datetime | None = None
    created_until: datetime | None = None


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def _created(dialect: str, op: str, bound: datetime) -> ColumnElement[bool]:
    """`created_at <op> bound`; SQLite compares days, as its stored text may differ in its
    fraction digits (as `findings.keyset` does)."""
    try:
        value = to_db(dialect, _utc(bound))
    except OverflowError:  # e.g. year 1 with a negative offset
        raise InvalidInputError(f"{bound.isoformat()} is out of range") from None
    column: Any = runs.c.created_at
    bound_expr: Any = value
    if dialect == "sqlite":
        column, bound_expr = func.julianday(column), func.julianday(value)
    clause: ColumnElement[bool] = column >= bound_expr if op == ">=" else column <= bound_expr
    return clause


def _has_model(dialect: str, model: str) -> ColumnElement[bool]:
    """The run's `config.models` holds `model` (JSONB containment / SQLite's json_each)."""
    if dialect == "postgresql":
        models = type_coerce(runs.c.config, JSONB)["models"]
        return models.contains(type_coerce([model], JSONB))
    each = func.json_each(runs.c.config, literal("$.models")).table_valued("value")
    return exists(select(literal(1)).select_from(each).where(each.c.value == model))


def filtered(dialect: str, org_id: str, filters: RunFilter) -> Select[Any]:
    """The organisation's runs that pass `filters` (unordered)."""
    for name, value in (("definition", filters.definition_id), ("model", filters.model)):
        if value is not None and "\x00" in value:  # PostgreSQL stores no NUL character
            raise InvalidInputError(f"{name} contains a NUL character")
    query = select(runs).where(runs.c.org_id == org_id)
    if filters.status is not None:
        query = query.where(runs.c.status == filters.status.value)
    if filters.definition_id is not None:
        query = query.where(runs.c.definition_id == filters.definition_id)
    if filters.model is not None:
        query = query.where(_has_model(dialect, filters.model))
    if filters.created_since is not None:
        query = query.where(_created(dialect, ">=", filters.created_since))
    if filters.created_until is not None:
        query = query.where(_created(dialect, "<=", filters.created_until))
    return query


async def find_runs(
    conn: AsyncConnection,
    org_id: str,
    filters: RunFilter | None = None,
    *,
    limit: int = 100,
    after: tuple[str, str] | None = None,
) -> list[Run]:
    """Up to `limit + 1` runs newest first (the extra one says a next page exists), after
    the run whose (`created_at` ISO-8601, `id`) is `after`. The definition filter is a
    version id or unique prefix of the organisation's: any other is DEFINITION_NOT_FOUND."""
    if filters is not None and filters.definition_id is not None:
        stored = await get_definition(conn, org_id, filters.definition_id)
        filters = replace(filters, definition_id=stored.version.id)
    dialect = conn.dialect.name
    query = newest_first(
        filtered(dialect, org_id, filters or RunFilter()), runs, dialect, limit, after
    )
    return [run_from_row(row) for row in await conn.execute(query)]
