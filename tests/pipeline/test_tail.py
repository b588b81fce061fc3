"""The tail of a run's probes (when the last probes enqueue finalize): counted exactly up to
the threshold, only the run's own probe jobs, and through the partial indexes, so the check
every probe makes costs the same at any run size (it once counted the whole run)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event, update

from valuerank.db import Database
from valuerank.db.tables import jobs
from valuerank.pipeline.run_end import TAIL, at_tail
from valuerank.queue import JobSpec, enqueue_many
from valuerank.runs.kinds import FINALIZE, PROBE

RUN = "run-tail"


async def _jobs(db: Database, org_id: str, partition: str, kind: str, n: int, start: int) -> None:
    async with db.transaction() as conn:
        await enqueue_many(
            conn,
            [
                JobSpec(kind=kind, org_id=org_id, partition=partition, item_key=f"{kind}:{i}")
                for i in range(start, start + n)
            ],
        )


async def _set_status(db: Database, kind: str, status: str, n: int) -> None:
    """Move `n` of the run's queued jobs of `kind` to `status` (behind the queue's back)."""
    async with db.transaction() as conn:
        ids = (
            (
                await conn.execute(
                    jobs.select()
                    .with_only_columns(jobs.c.id)
                    .where(jobs.c.partition == RUN, jobs.c.kind == kind, jobs.c.status == "queued")
                    .order_by(jobs.c.item_key)
                    .limit(n)
                )
            )
            .scalars()
            .all()
        )
        await conn.execute(update(jobs).where(jobs.c.id.in_(ids)).values(status=status))


async def _tail(db: Database, org_id: str) -> bool:
    async with db.transaction() as conn:
        return await at_tail(conn, org_id, RUN)


async def test_the_tail_is_reached_at_the_threshold_of_active_probes(
    db: Database, org_id: str
) -> None:
    await _jobs(db, org_id, RUN, PROBE, 3 * TAIL, 0)
    # Other kinds in the run and probes of another run do not count.
    await _jobs(db, org_id, RUN, FINALIZE, 5, 0)
    await _jobs(db, org_id, "another-run", PROBE, 3 * TAIL, 0)
    assert not await _tail(db, org_id)
    await _set_status(db, PROBE, "succeeded", 2 * TAIL - 5)  # TAIL + 5 active (all queued)
    assert not await _tail(db, org_id)
    await _set_status(db, PROBE, "running", 10)  # still TAIL + 5 active, 10 of them running
    assert not await _tail(db, org_id)
    await _set_status(db, PROBE, "failed", 5)  # exactly TAIL active: queued and running
    assert await _tail(db, org_id)
    await _set_status(db, PROBE, "cancelled", TAIL - 10)  # only running ones left
    assert await _tail(db, org_id)


async def test_the_tail_check_searches_an_index(db: Database, org_id: str) -> None:
    """SQLite's plan names the index each count reads; PostgreSQL picks by statistics, so
    there the test asserts that the planner is able to use an index (sequential scans
    disabled, the plan names an index and no scan of the jobs table)."""
    await _jobs(db, org_id, RUN, PROBE, 50, 0)
    seen: list[tuple[str, Any]] = []

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, *rest: Any) -> None:
        seen.append((statement, parameters))

    async with db.transaction() as conn:
        sync = conn.sync_connection
        assert sync is not None
        event.listen(sync, "before_cursor_execute", record)
        try:
            await at_tail(conn, org_id, RUN)
        finally:
            event.remove(sync, "before_cursor_execute", record)
        statement, parameters = seen[0]
        if not db.url.is_sqlite:
            await conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
            plan = await conn.exec_driver_sql("EXPLAIN " + statement, parameters)
            text = " ".join(str(row[0]) for row in plan)
            assert "Index" in text and "Seq Scan on jobs" not in text, text
            return
        plan = await conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters)
        details = " ".join(str(row[-1]) for row in plan)
    # Each count is an index search on the run's partition and the status (the partial
    # indexes, or the (partition, kind, status) index), never a scan of the run's jobs.
    assert details.count("SEARCH jobs USING INDEX") == 2, details
    assert "status=?" in details and "SCAN jobs" not in details, details
    assert "sqlite_autoindex" not in details  # not a walk of the run's jobs by item key
