"""Database URLs: users write plain `sqlite:///…` or `postgresql://…`; we pick the async driver."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

Dialect = Literal["sqlite", "postgresql"]

_ASYNC_DRIVERS: dict[Dialect, str] = {"sqlite": "aiosqlite", "postgresql": "psycopg"}


class DatabaseURLError(ValueError):
    """The configured database URL cannot be used."""


@dataclass(frozen=True)
class DatabaseURL:
    """A database URL with the async driver chosen and the dialect known."""

    url: URL
    dialect: Dialect

    @property
    def is_sqlite(self) -> bool:
        return self.dialect == "sqlite"

    @property
    def sqlite_path(self) -> str | None:
        """The file of a SQLite database; None for an in-memory one."""
        if not self.is_sqlite or not self.url.database or self.url.database == ":memory:":
            return None
        return self.url.database

    def render(self) -> str:
        """The URL with any password hidden, for messages and logs."""
        return self.url.render_as_string(hide_password=True)


def normalize_database_url(raw: str) -> DatabaseURL:
    """Accept `sqlite:///path`, `postgresql://…`, `postgres://…` or any of them naming a driver.

    Whatever driver the URL names, ValueRank talks to SQLite through aiosqlite and to
    PostgreSQL through psycopg 3 (async); the rest of the URL is kept as given.
    """
    try:
        url = make_url(raw.strip())
    except ArgumentError as exc:
        raise DatabaseURLError(
            f"cannot parse database URL {raw!r}: use sqlite:///path/to/file.db "
            "or postgresql://user@host:5432/dbname"
        ) from exc
    backend = url.get_backend_name()
    if backend == "postgres":
        backend = "postgresql"
    if backend not in _ASYNC_DRIVERS:
        raise DatabaseURLError(
            f"unsupported database {backend!r} in {url.render_as_string(hide_password=True)}: "
            "ValueRank runs on SQLite (sqlite:///file.db) or PostgreSQL (postgresql://…)"
        )
    dialect: Dialect = "sqlite" if backend == "sqlite" else "postgresql"
    return DatabaseURL(
        url=url.set(drivername=f"{dialect}+{_ASYNC_DRIVERS[dialect]}"), dialect=dialect
    )
