"""The engine's behaviour that every service relies on: on SQLite, a task cancelled in the
middle of a write transaction releases the write lock at once (its work rolled back); on
PostgreSQL, no statement is ever JIT-compiled (it cost every claim seconds on a queue that
autovacuum had analysed)."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import text
from tests.conftest import TestDatabase, _libpq_url, missing_prerequisite

from valuerank.db import Database
from valuerank.db.engine import create_database
from valuerank.queue.claim_sql import PG_CLAIM_ALONE, pg_sql

# A read that keeps SQLite busy for a while (hundreds of milliseconds).
SLOW = (
    "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 2000000) "
    "SELECT count(*) FROM r"
)


async def test_a_cancelled_writer_releases_the_lock_and_its_work(tmp_path: Path) -> None:
    db = create_database(f"sqlite:///{tmp_path / 'lock.db'}", busy_timeout_ms=2000)
    try:
        async with db.transaction() as conn:
            await conn.execute(text("CREATE TABLE t (x INTEGER)"))
        started = asyncio.Event()

        async def writer() -> None:
            async with db.transaction(immediate=True) as conn:
                await conn.execute(text("INSERT INTO t VALUES (1)"))
                started.set()
                await conn.execute(text(SLOW))

        task = asyncio.create_task(writer())
        await started.wait()
        await asyncio.sleep(0.02)  # inside the slow statement
        assert not task.done()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

        # Free the moment the task has ended: a writer that does not wait at all gets the
        # lock ("database is locked" before), whatever the machine's load.
        impatient = create_database(f"sqlite:///{tmp_path / 'lock.db'}", busy_timeout_ms=0)
        try:
            async with impatient.transaction(immediate=True) as conn:
                await conn.execute(text("INSERT INTO t VALUES (2)"))
        finally:
            await impatient.dispose()
        async with db.transaction() as conn:
            assert (await conn.execute(text("SELECT x FROM t"))).scalars().all() == [2]
    finally:
        await db.dispose()


# The claim a worker sends, its two parameters written in (EXPLAIN plans it, runs nothing).
CLAIM = (
    pg_sql(PG_CLAIM_ALONE, 8, ("probe",))
    .replace(":lease_seconds", "60")
    .replace(":worker_id", "'w1'")
)
# As if the statistics made every statement costly enough for the server to compile it.
EVERY_STATEMENT_COSTLY = "SET jit_above_cost = 0"


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_postgresql_sessions_never_jit_compile_the_claim(
    db: Database, database_url: TestDatabase
) -> None:
    # The control: a plain session on this server compiles the claim.
    with psycopg.connect(_libpq_url(database_url.url), autocommit=True) as plain:
        plain.execute(EVERY_STATEMENT_COSTLY)
        plan = "\n".join(str(r[0]) for r in plain.execute("EXPLAIN " + CLAIM))
    if "JIT:" not in plan:
        missing_prerequisite("this PostgreSQL cannot JIT-compile (no LLVM): nothing to prove")
    # Ours do not, even when the first use of a connection ends in a rollback (a SET in a
    # transaction that is rolled back is undone).
    with contextlib.suppress(RuntimeError):
        async with db.transaction():
            raise RuntimeError("the first use of the connection fails")
    async with db.transaction() as conn:
        assert (await conn.execute(text("SHOW jit"))).scalar() == "off"
        await conn.execute(text(EVERY_STATEMENT_COSTLY))
        ours = "\n".join(str(r[0]) for r in await conn.execute(text("EXPLAIN " + CLAIM)))
    assert "JIT:" not in ours and "Update on jobs" in ours


async def test_a_snapshot_reads_one_state_and_writes_nothing(db: Database) -> None:
    # Another connection commits between two reads of one snapshot: the second read still
    # sees the state of the first (SQLite's deferred read transaction in WAL mode; PostgreSQL's
    # REPEATABLE READ, where READ COMMITTED would show the new row).
    async with db.transaction() as conn:
        await conn.execute(text("CREATE TABLE snap (n INTEGER)"))
    count = text("SELECT count(*) FROM snap")
    async with db.snapshot() as conn:
        assert await conn.scalar(count) == 0
        async with db.transaction() as writer:
            await writer.execute(text("INSERT INTO snap (n) VALUES (1)"))
        assert await conn.scalar(count) == 0
    async with db.snapshot() as conn:
        assert await conn.scalar(count) == 1
        if db.dialect == "postgresql":  # read only: a write is refused
            with pytest.raises(Exception, match="read-only transaction"):
                await conn.execute(text("INSERT INTO snap (n) VALUES (2)"))
