"""The async engine and the transaction helpers every service uses."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.util.concurrency import await_only, in_greenlet

from valuerank.config import DEFAULT_POOL_OVERFLOW, DEFAULT_POOL_SIZE
from valuerank.db.compiled import compile_each_time
from valuerank.db.sqlite_driver import one_hop_dbapi
from valuerank.db.url import DatabaseURL, normalize_database_url

# Execution option asking SQLite to take the write lock at BEGIN (BEGIN IMMEDIATE):
# a read-then-write transaction cannot then fail half-way with "database is locked".
SQLITE_BEGIN_OPTION = "sqlite_begin"

# libpq connection parameters for PostgreSQL (callers' connect_args override them).
PG_CONNECT_ARGS: dict[str, Any] = {
    "connect_timeout": 10,
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
}

# Every PostgreSQL session turns JIT off. The server compiles a statement with LLVM once its
# estimated cost passes jit_above_cost (100,000 by default), and the claim's estimate does
# once autovacuum has analysed a queue of ~100,000 jobs (the estimate ignores the LIMITs that
# make it read a few rows): each claim then spent 1–6 s compiling a 20 ms statement, and a
# 100,000-job run fell from ~80 to ~6 jobs/s. No statement here runs long enough to gain.
PG_SESSION_SETUP = "SET jit = off"


@dataclass
class Database:
    """One database: its URL and its async engine."""

    url: DatabaseURL
    engine: AsyncEngine

    @property
    def dialect(self) -> str:
        return self.url.dialect

    @asynccontextmanager
    async def transaction(self, *, immediate: bool = False) -> AsyncIterator[AsyncConnection]:
        """A connection inside one transaction: committed on success, rolled back on error.

        `immediate=True` takes SQLite's write lock up front (no effect on PostgreSQL).
        """
        async with self.engine.connect() as conn:
            if immediate and self.url.is_sqlite:
                conn = await conn.execution_options(**{SQLITE_BEGIN_OPTION: "IMMEDIATE"})
            async with conn.begin():
                yield conn

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[AsyncConnection]:
        """A read-only transaction whose statements all see one state of the database: for a
        read made of several queries (a run's report and its results) that must agree.

        PostgreSQL: REPEATABLE READ, READ ONLY (at the default READ COMMITTED each statement
        sees its own snapshot; a write is refused). SQLite in WAL mode: a deferred transaction
        reads one snapshot from its first read on, and takes no write lock.
        """
        async with self.engine.connect() as conn:
            if not self.url.is_sqlite:
                conn = await conn.execution_options(
                    isolation_level="REPEATABLE READ", postgresql_readonly=True
                )
            async with conn.begin():
                yield conn

    async def dispose(self) -> None:
        await self.engine.dispose()


def _install_sqlite_pragmas(engine: AsyncEngine, busy_timeout_ms: int, wal: bool) -> None:
    """WAL, a busy timeout, foreign keys, and transactions that SQLAlchemy really controls."""

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Hand transaction control to SQLAlchemy (pysqlite's own is unreliable).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        cursor.execute("PRAGMA foreign_keys = ON")
        if wal:
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Any) -> None:
        mode = conn.get_execution_options().get(SQLITE_BEGIN_OPTION, "DEFERRED")
        conn.exec_driver_sql(f"BEGIN {mode}")

    @event.listens_for(engine.sync_engine.pool, "invalidate")
    def _on_invalidate(dbapi_connection: Any, _record: Any, _exc: BaseException | None) -> None:
        if dbapi_connection is not None:
            _roll_back_before_close(engine.dialect.get_driver_connection(dbapi_connection))


def _install_pg_session_setup(engine: AsyncEngine) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(PG_SESSION_SETUP)
        finally:
            cursor.close()
        # Committed: a SET in a transaction that is rolled back (as the pool does when the
        # connection is first returned) would be undone.
        dbapi_connection.commit()


def _roll_back_before_close(driver: Any) -> None:
    """Roll back the transaction of a connection SQLAlchemy is discarding (a task cancelled
    mid-statement invalidates its connection). Closing alone is not enough: the cancelled
    statement's cursor is still alive, so SQLite defers the close, and the open transaction
    keeps the database's write lock until the garbage collector frees that cursor — every
    other writer gets "database is locked" meanwhile. The rollback waits (on the driver's
    thread) for the running statement, then ends the transaction at once."""
    if driver is None or not in_greenlet():
        return  # the garbage collector's clean-up: nothing to await on
    # Already closed or broken: the close that follows does what can be done.
    with contextlib.suppress(Exception):
        await_only(asyncio.shield(driver.rollback()))


def create_database(
    raw_url: str,
    *,
    busy_timeout_ms: int = 30_000,
    pool_size: int = DEFAULT_POOL_SIZE,
    pool_overflow: int = DEFAULT_POOL_OVERFLOW,
    pool_timeout: float = 30.0,
    echo: bool = False,
    connect_args: dict[str, Any] | None = None,
    fast_paths: bool = True,
) -> Database:
    """Build the engine for a plain or driver-qualified URL (SQLite or PostgreSQL).
    `fast_paths=False` keeps to the libraries' public paths: the stock aiosqlite adapter and
    upserts compiled by SQLAlchemy at each execution (`VALUERANK_DB_FAST_PATHS`)."""
    url = normalize_database_url(raw_url)
    kwargs: dict[str, Any] = {"echo": echo, "connect_args": dict(connect_args or {})}
    if url.is_sqlite:
        path = url.sqlite_path
        if path is not None:
            Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
        kwargs["connect_args"].setdefault("timeout", busy_timeout_ms / 1000)
        if fast_paths:
            kwargs["module"] = one_hop_dbapi()  # one thread round trip per statement, not four
    else:
        # A dead connection is replaced at checkout (pre-ping); a server that is down or
        # restarting fails a connect within `connect_timeout` instead of hanging, and TCP
        # keepalives notice a peer that vanished without closing the socket.
        kwargs["pool_pre_ping"] = True
        kwargs["pool_size"], kwargs["max_overflow"] = pool_size, pool_overflow
        kwargs["pool_timeout"] = pool_timeout  # then sqlalchemy.exc.TimeoutError: API 503
        for key, value in PG_CONNECT_ARGS.items():
            kwargs["connect_args"].setdefault(key, value)
    engine = create_async_engine(url.url, **kwargs)
    if not fast_paths:
        compile_each_time(engine.sync_engine)
    if url.is_sqlite:
        _install_sqlite_pragmas(engine, busy_timeout_ms, wal=url.sqlite_path is not None)
    else:
        _install_pg_session_setup(engine)
    return Database(url=url, engine=engine)
