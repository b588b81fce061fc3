"""Canaries for the private APIs of aiosqlite and SQLAlchemy that the fast paths rest on.

`db/sqlite_driver.py` (one thread round trip per SQLite statement) and `db/compiled.py`
(upserts compiled once) reach past those libraries' public APIs. Each test below checks one
private use on the real libraries, so a release that changes it fails here, by name, instead
of somewhere in a probe. `VALUERANK_DB_FAST_PATHS=false` runs on their public paths only.
"""

from __future__ import annotations

import inspect
import sqlite3
import threading
from collections.abc import AsyncIterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import aiosqlite
import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, select, text
from sqlalchemy.dialects.sqlite import aiosqlite as sa_aiosqlite
from sqlalchemy.sql.compiler import Compiled

from valuerank.db import Database
from valuerank.db.compiled import CompiledOnce
from valuerank.db.engine import create_database
from valuerank.db.sqlite_driver import OneHopConnection, OneHopCursor

SWITCH = "set VALUERANK_DB_FAST_PATHS=false to run on the public paths meanwhile"


def _changed(library: str, what: str, user: str) -> str:
    return (
        f"{library} {version(library)} changed {what}, which {user} relies on: adapt it to "
        f"the new release (or pin the previous one), or {SWITCH}"
    )


async def test_aiosqlite_connection_keeps_its_sqlite3_connection_thread_and_executor() -> None:
    connection = await aiosqlite.connect(":memory:")
    try:
        assert isinstance(getattr(connection, "_conn", None), sqlite3.Connection), _changed(
            "aiosqlite", "Connection._conn", "db/sqlite_driver.py"
        )
        thread = getattr(connection, "_thread", connection)
        assert isinstance(thread, threading.Thread), _changed(
            "aiosqlite", "Connection._thread", "db/sqlite_driver.py"
        )
        execute = getattr(connection, "_execute", None)
        assert execute is not None and inspect.iscoroutinefunction(execute), _changed(
            "aiosqlite", "Connection._execute", "db/sqlite_driver.py"
        )
        # `_execute(fn, *args)` runs fn on the connection's thread and returns its result.
        ran_on = await connection._execute(threading.current_thread)  # type: ignore[no-untyped-call]
        assert ran_on is thread, _changed(
            "aiosqlite", "what Connection._execute runs on", "db/sqlite_driver.py"
        )
    finally:
        await connection.close()


def test_sqlalchemy_aiosqlite_adapter_has_what_the_one_hop_classes_use() -> None:
    cursor_slots = _slots(sa_aiosqlite.AsyncAdapt_aiosqlite_cursor)
    for name in ("_adapt_connection", "_connection", "_rows", "description", "await_"):
        assert name in cursor_slots, _changed(
            "sqlalchemy", f"AsyncAdapt_aiosqlite_cursor.{name}", "db/sqlite_driver.py"
        )
    connection = sa_aiosqlite.AsyncAdapt_aiosqlite_connection
    for name in ("_handle_exception", "cursor", "commit", "rollback"):
        assert callable(getattr(connection, name, None)), _changed(
            "sqlalchemy", f"AsyncAdapt_aiosqlite_connection.{name}", "db/sqlite_driver.py"
        )
    assert "_connection" in _slots(connection), _changed(
        "sqlalchemy", "AsyncAdapt_aiosqlite_connection._connection", "db/sqlite_driver.py"
    )
    init = inspect.signature(sa_aiosqlite.AsyncAdapt_aiosqlite_dbapi.__init__)
    assert list(init.parameters)[1:] == ["aiosqlite", "sqlite"], _changed(
        "sqlalchemy", "AsyncAdapt_aiosqlite_dbapi(aiosqlite, sqlite)", "db/sqlite_driver.py"
    )


def _slots(cls: type) -> set[str]:
    found: set[str] = set()
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        found |= {slots} if isinstance(slots, str) else set(slots)
        found |= set(klass.__dict__)
    return found


def test_a_compiled_statement_executes_on_a_connection() -> None:
    assert callable(getattr(Compiled, "_execute_on_connection", None)), _changed(
        "sqlalchemy", "Compiled._execute_on_connection", "db/compiled.py"
    )


TABLE = Table(
    "canary", MetaData(), Column("id", Integer, primary_key=True), Column("v", String(20))
)
UPSERT = CompiledOnce(
    lambda insert: (s := insert(TABLE)).on_conflict_do_update(
        index_elements=["id"], set_={"v": s.excluded.v}
    )
)


@pytest.fixture(params=[True, False], ids=["fast", "stock"])
async def paths_db(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Database]:
    db = create_database(f"sqlite:///{tmp_path / 'paths.db'}", fast_paths=request.param)
    async with db.transaction() as conn:
        await conn.execute(text("CREATE TABLE canary (id INTEGER PRIMARY KEY, v TEXT)"))
    try:
        yield db
    finally:
        await db.dispose()


async def test_both_paths_write_and_read_the_same(
    paths_db: Database, request: pytest.FixtureRequest
) -> None:
    fast = "fast" in request.node.callspec.id
    async with paths_db.transaction() as conn:
        raw: Any = await conn.get_raw_connection()
        assert isinstance(raw.dbapi_connection, OneHopConnection) is fast
        cursor = raw.dbapi_connection.cursor()
        assert isinstance(cursor, OneHopCursor) is fast
        cursor.close()
        await UPSERT.execute(conn, [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}])
        await UPSERT.execute(conn, {"id": 1, "v": "c"})
    async with paths_db.transaction() as conn:
        rows = (await conn.execute(select(TABLE).order_by(TABLE.c.id))).all()
    assert [tuple(r) for r in rows] == [(1, "c"), (2, "b")]
