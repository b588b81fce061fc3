"""The engine's SQLite behaviour that every service relies on: a task cancelled in the
middle of a write transaction releases the write lock at once (its work rolled back)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

from sqlalchemy import text

from valuerank.db.engine import create_database

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

        begun = time.monotonic()
        async with db.transaction(immediate=True) as conn:  # "database is locked" before
            await conn.execute(text("INSERT INTO t VALUES (2)"))
        assert time.monotonic() - begun < 1.5  # not a busy timeout that happened to end
        async with db.transaction() as conn:
            assert (await conn.execute(text("SELECT x FROM t"))).scalars().all() == [2]
    finally:
        await db.dispose()
