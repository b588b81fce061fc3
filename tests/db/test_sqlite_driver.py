"""SQLite through the one-round-trip cursor (db/sqlite_driver.py) behaves as the adapter did:
rows, row counts and errors as before, server-side streams unchanged, and no connection goes
back to the pool with a transaction open, whoever opened it (the pool's rollback is skipped
only when there is nothing to roll back)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import sqlalchemy.exc
from sqlalchemy import text

from valuerank.db import Database
from valuerank.db.engine import create_database
from valuerank.db.sqlite_driver import OneHopConnection


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = create_database(f"sqlite:///{tmp_path / 'driver.db'}", busy_timeout_ms=0)
    async with database.transaction() as conn:
        await conn.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT UNIQUE)"))
    try:
        yield database
    finally:
        await database.dispose()


async def _lock_is_free(db: Database) -> bool:
    """Can a writer that does not wait at all take SQLite's write lock now?"""
    try:
        async with db.transaction(immediate=True) as conn:
            await conn.execute(text("SELECT 1"))
        return True
    except sqlalchemy.exc.OperationalError:
        return False


async def test_statements_give_rows_counts_and_ids(db: Database) -> None:
    async with db.transaction() as conn:
        raw = await conn.get_raw_connection()
        assert isinstance(raw.dbapi_connection, OneHopConnection)
        inserted = await conn.execute(text("INSERT INTO t (v) VALUES ('a')"))
        assert inserted.rowcount == 1
        assert inserted.lastrowid == 1
        many = await conn.execute(text("INSERT INTO t (v) VALUES (:v)"), [{"v": "b"}, {"v": "c"}])
        assert many.rowcount == 2
        returned = await conn.execute(text("INSERT INTO t (v) VALUES ('d') RETURNING id, v"))
        assert [tuple(r) for r in returned] == [(4, "d")]
        rows = await conn.execute(text("SELECT id, v FROM t ORDER BY id"))
        assert list(rows.keys()) == ["id", "v"]
        assert [tuple(r) for r in rows] == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
        changed = await conn.execute(text("UPDATE t SET v = v || '!' WHERE id > 2"))
        assert changed.rowcount == 2
    async with db.transaction() as conn:
        streamed = await conn.stream(text("SELECT v FROM t ORDER BY id"))
        assert [row.v async for row in streamed] == ["a", "b", "c!", "d!"]


async def test_an_error_is_the_drivers_and_its_transaction_is_rolled_back(db: Database) -> None:
    with pytest.raises(sqlalchemy.exc.IntegrityError):
        async with db.transaction(immediate=True) as conn:
            await conn.execute(text("INSERT INTO t (v) VALUES ('x')"))
            await conn.execute(text("INSERT INTO t (v) VALUES ('x')"))
    with pytest.raises(sqlalchemy.exc.OperationalError, match="no such table"):
        async with db.transaction() as conn:
            await conn.execute(text("SELECT * FROM missing"))
    assert await _lock_is_free(db)
    async with db.transaction() as conn:
        assert (await conn.execute(text("SELECT count(*) FROM t"))).scalar_one() == 0


async def test_a_connection_closed_uncommitted_leaves_nothing_behind(db: Database) -> None:
    async with db.engine.connect() as conn:  # SQLAlchemy's own transaction, never committed
        await conn.execute(text("INSERT INTO t (v) VALUES ('gone')"))
    async with db.engine.connect() as conn:  # one opened under SQLAlchemy, on the driver
        raw = await conn.get_raw_connection()
        driver = raw.driver_connection
        assert driver is not None
        await driver.execute("BEGIN IMMEDIATE")
        await driver.execute("INSERT INTO t (v) VALUES ('also gone')")
    # The pool rolled both back: the lock is free and nothing was written.
    assert await _lock_is_free(db)
    async with db.transaction() as conn:
        assert (await conn.execute(text("SELECT count(*) FROM t"))).scalar_one() == 0
