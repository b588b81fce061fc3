"""What differs between SQLite and PostgreSQL: the clock, INSERT … ON CONFLICT, and the
PostgreSQL hot path's direct statements (`pg_rows`).

The database clock is the only clock the queue trusts.

Workers on many machines disagree about the time; the database is one clock for all of them.
SQLite's CURRENT_TIMESTAMP has one-second resolution, so SQLite uses
`strftime('%Y-%m-%d %H:%M:%f', 'now')` (milliseconds, UTC, in the text format SQLAlchemy
stores and parses). PostgreSQL uses `now()` (the start of the current transaction).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import DateTime, Float, cast, extract, func, literal
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

_SQLITE_FORMAT = "%Y-%m-%d %H:%M:%f"
_TS = DateTime(timezone=True)


def db_now(dialect: str) -> ColumnElement[datetime]:
    """The database's current time as an SQL expression."""
    return db_now_plus(dialect, 0.0)


def db_now_plus(dialect: str, seconds: float) -> ColumnElement[datetime]:
    """The database's current time plus `seconds` (may be negative)."""
    if dialect == "sqlite":
        if seconds == 0:
            return func.strftime(_SQLITE_FORMAT, "now", type_=_TS)
        return func.strftime(_SQLITE_FORMAT, "now", f"{seconds:+.3f} seconds", type_=_TS)
    if seconds == 0:
        return func.now(type_=_TS)
    return func.now(type_=_TS) + literal(timedelta(seconds=seconds))


def seconds_since(dialect: str, column: ColumnElement[Any]) -> ColumnElement[float]:
    """How many seconds ago `column` was, by the database clock."""
    if dialect == "sqlite":
        return cast((func.julianday("now") - func.julianday(column)) * 86400.0, Float)
    return cast(extract("epoch", func.now() - column), Float)


def as_utc(value: datetime) -> datetime:
    """An aware UTC datetime. SQLite hands back naive datetimes that are UTC."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def iso(value: datetime | None) -> str | None:
    """ISO-8601 with its UTC offset on both databases (None stays None), for JSON."""
    return None if value is None else as_utc(value).isoformat()


def to_db(dialect: str, value: datetime) -> datetime:
    """A datetime ready to bind: UTC; naive on SQLite, which would drop the offset silently."""
    if value.tzinfo is None:
        raise ValueError(f"datetime {value!r} has no time zone: pass an aware datetime")
    utc = value.astimezone(UTC)
    return utc.replace(tzinfo=None) if dialect == "sqlite" else utc


def compact_sql(sql: str) -> str:
    """SQL text with each run of whitespace made one space (for statements whose string
    literals hold no two in a row): psycopg parses a statement once and keeps it only when
    it is at most 4 096 characters long."""
    return re.sub(r"\s+", " ", sql).strip()


def upsert(conn: AsyncConnection) -> Any:
    """The dialect's INSERT construct, which knows ON CONFLICT."""
    return postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert


_BIND = re.compile(r"(?<![:\w]):(\w+)")


@functools.lru_cache(maxsize=512)
def _pyformat(sql: str) -> str:
    """`:name` parameters as psycopg's `%(name)s` (the SQL has no `%` and no `::`)."""
    return _BIND.sub(r"%(\1)s", sql)


async def pg_rows(
    conn: AsyncConnection, sql: str, params: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Run one statement (`:name` parameters, already adapted for psycopg: `Jsonb(…)` for
    JSON) on the psycopg connection under `conn`, in `conn`'s transaction if one is open,
    and return its rows as dicts.

    For the PostgreSQL hot path only (a claim, a completion): SQLAlchemy's execution and
    result machinery costs about 0.3 ms per statement, as much as the round trip. Errors
    come out as SQLAlchemy's (`DBAPIError` subclasses, the connection invalidated when it
    broke), exactly as from `conn.execute`."""
    # Here, not with the module: a process on SQLite never loads psycopg (0.1 s).
    import psycopg
    from psycopg.rows import dict_row

    raw = await conn.get_raw_connection()
    driver: psycopg.AsyncConnection[Any] = raw.driver_connection  # type: ignore[assignment]
    try:
        async with driver.cursor(row_factory=dict_row) as cursor:
            await cursor.execute(_pyformat(sql), params)
            return await cursor.fetchall()
    except psycopg.Error as exc:
        broken = driver.closed or driver.broken
        if broken:
            await conn.invalidate()
        raise DBAPIError.instance(
            sql,
            dict(params),
            exc,
            psycopg.Error,
            connection_invalidated=broken,
            dialect=conn.dialect,
        ) from exc
