"""Hot statements SQLAlchemy cannot cache, compiled once per database and executed compiled.

SQLAlchemy caches a statement's SQL by its cache key, but the dialects' INSERT … ON CONFLICT
constructs (SQLite's and PostgreSQL's `insert`) have none (`inherit_cache = False` in 2.0):
each execution compiles the statement again, ~0.7 ms of CPU per upsert measured on SQLite
(0.95 ms compiled each time, 0.24 ms compiled once). A probe writes three. `CompiledOnce`
compiles its statement once per engine dialect and set of parameter names, as SQLAlchemy's
cache would, and executes the compiled form: the same SQL, the same parameter processing
(types, Python-side defaults), the same result.

Executing a `Compiled` rests on SQLAlchemy's private `Compiled._execute_on_connection`
(tests/db/test_private_apis.py checks it on every release pinned): an engine handed to
`compile_each_time` (`VALUERANK_DB_FAST_PATHS=false`) executes the statement instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast
from weakref import WeakKeyDictionary, WeakSet

from sqlalchemy import CursorResult, Engine
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.compiler import Compiled

# A statement builder: given the dialect's INSERT function (which knows ON CONFLICT).
Build = Callable[[Callable[..., Any]], Any]

# Engines whose statements go SQLAlchemy's public way, compiled at each execution.
_EACH_TIME: WeakSet[Engine] = WeakSet()


def compile_each_time(engine: Engine) -> None:
    """Make `CompiledOnce` execute its statement on `engine` instead of its compiled form."""
    _EACH_TIME.add(engine)


def _insert_of(dialect: Dialect) -> Callable[..., Any]:
    return postgresql.insert if dialect.name == "postgresql" else sqlite.insert


class CompiledOnce:
    """`build(insert)` compiled once per dialect (and parameter names), then reused."""

    def __init__(self, build: Build) -> None:
        self._build = build
        self._compiled: WeakKeyDictionary[Dialect, dict[tuple[Any, ...], Compiled]] = (
            WeakKeyDictionary()
        )

    def _for(self, dialect: Dialect, keys: tuple[str, ...], many: bool) -> Compiled:
        by_keys = self._compiled.setdefault(dialect, {})
        compiled = by_keys.get((keys, many))
        if compiled is None:
            # As SQLAlchemy compiles for its cache: the parameters' names, sorted, and
            # whether several rows are sent at once.
            compiled = self._build(_insert_of(dialect)).compile(
                dialect=dialect, column_keys=list(keys), for_executemany=many
            )
            by_keys[(keys, many)] = compiled
        return compiled

    async def execute(
        self, conn: AsyncConnection, params: Mapping[str, Any] | Sequence[Mapping[str, Any]]
    ) -> CursorResult[Any]:
        """Execute with one row of parameters, or several (executemany, same names)."""
        if conn.sync_engine in _EACH_TIME:
            return await conn.execute(self._build(_insert_of(conn.dialect)), params)
        many = not isinstance(params, Mapping) and len(params) > 1
        first = params if isinstance(params, Mapping) else params[0]
        compiled = self._for(conn.dialect, tuple(sorted(first)), many)
        # A Compiled executes as its statement would (Compiled._execute_on_connection).
        return await conn.execute(cast(Any, compiled), params)
