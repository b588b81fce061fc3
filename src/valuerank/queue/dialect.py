"""What differs between SQLite and PostgreSQL: the clock and INSERT … ON CONFLICT.

The database clock is the only clock the queue trusts.

Workers on many machines disagree about the time; the database is one clock for all of them.
SQLite's CURRENT_TIMESTAMP has one-second resolution, so SQLite uses
`strftime('%Y-%m-%d %H:%M:%f', 'now')` (milliseconds, UTC, in the text format SQLAlchemy
stores and parses). PostgreSQL uses `now()` (the start of the current transaction).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import DateTime, Float, cast, extract, func, literal
from sqlalchemy.dialects import postgresql, sqlite
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


def to_db(dialect: str, value: datetime) -> datetime:
    """A datetime ready to bind: UTC; naive on SQLite, which would drop the offset silently."""
    if value.tzinfo is None:
        raise ValueError(f"datetime {value!r} has no time zone: pass an aware datetime")
    utc = value.astimezone(UTC)
    return utc.replace(tzinfo=None) if dialect == "sqlite" else utc


def upsert(conn: AsyncConnection) -> Any:
    """The dialect's INSERT construct, which knows ON CONFLICT."""
    return postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
