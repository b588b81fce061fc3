"""Maintenance: reaps, prunes only what is old and finished, records its run, runs once."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest
from sqlalchemy import func, select, text, update

from valuerank.db.tables import events, job_errors, jobs, maintenance_runs, outbox
from valuerank.queue import JobStatus, complete, fail, pause_partition
from valuerank.queue.dialect import db_now_plus
from valuerank.queue.maintenance import LOCK_NAME, last_maintenance, run_maintenance
from valuerank.queue.outbox import enqueue_notifications, register_webhook

if TYPE_CHECKING:
    from tests.queue.conftest import Kit

DAY = 86400.0


async def _count(kit: Kit, table: object) -> int:
    async with kit.db.transaction() as conn:
        return int(await conn.scalar(select(func.count()).select_from(table)) or 0)  # type: ignore[arg-type]


async def _age_outbox(kit: Kit, seconds: float) -> None:
    async with kit.db.transaction(immediate=True) as conn:
        ago = db_now_plus(conn.dialect.name, -seconds)
        await conn.execute(update(outbox).values(delivered_at=ago, status="delivered"))


async def test_prunes_only_old_finished_jobs_and_records_the_run(kit: Kit) -> None:
    settings = kit.settings.model_copy(update={"retention_days": 7})
    old_done, old_failed, new_done, waiting, running, expired = await kit.put(6)
    jobs_ = await kit.take(6)
    by_id = {j.id: j for j in jobs_}
    async with kit.db.transaction(immediate=True) as conn:
        assert await complete(conn, by_id[old_done].lease, {"ok": True})
        assert await fail(conn, by_id[old_failed].lease, "boom")
        assert await complete(conn, by_id[new_done].lease)
        await conn.execute(  # one job back to queued, as if never run
            update(jobs)
            .where(jobs.c.id == waiting)
            .values(status="queued", lease_token=None, lease_expires_at=None)
        )
    await kit.age("finished_at", 8 * DAY, [old_done, old_failed])
    await kit.age("finished_at", 6 * DAY, [new_done])
    await kit.age("lease_expires_at", 1, [expired])
    async with kit.db.transaction() as conn:
        hook = await register_webhook(
            conn, kit.org_id, "http://example.invalid/x", event_types=["old", "new"]
        )
        await enqueue_notifications(conn, kit.org_id, "old", {})
    await _age_outbox(kit, 8 * DAY)
    async with kit.db.transaction() as conn:
        await enqueue_notifications(conn, kit.org_id, "new", {})  # pending: kept
    events_before = await _count(kit, events)
    assert await _count(kit, job_errors) == 1

    record = await run_maintenance(kit.db, settings, worker_id="w-maint")
    assert record is not None and record.status == "succeeded" and record.error is None
    assert record.worker_id == "w-maint" and record.duration_ms >= 0
    assert record.finished_at >= record.started_at
    assert record.actions["pruned_jobs"] == 2
    assert record.actions["pruned_outbox"] == 1
    assert record.actions["reaped"]["requeued"] == 1
    assert record.actions["more"] is False
    remaining = {j: (await kit.load(j)).status for j in (new_done, waiting, running, expired)}
    assert remaining == {
        new_done: JobStatus.SUCCEEDED,
        waiting: JobStatus.QUEUED,
        running: JobStatus.RUNNING,
        expired: JobStatus.QUEUED,
    }
    async with kit.db.transaction() as conn:
        left = set((await conn.execute(select(jobs.c.id))).scalars())
        assert left == {new_done, waiting, running, expired}
        topics = set((await conn.execute(select(outbox.c.topic))).scalars())
        assert topics == {"new"}
        (stored,) = (await conn.execute(select(maintenance_runs))).all()
        assert stored.id == record.id and stored.actions == record.actions
        assert (await last_maintenance(conn)) == record
    assert await _count(kit, job_errors) == 1  # the lease expiry's; the failed job's went
    assert await _count(kit, events) >= events_before  # events are kept
    assert hook.id


async def test_batches_bound_a_run(kit: Kit) -> None:
    await kit.put(3)
    taken = await kit.take(3)
    async with kit.db.transaction(immediate=True) as conn:
        for job in taken:
            await complete(conn, job.lease)
    await kit.age("finished_at", 30 * DAY)
    first = await run_maintenance(kit.db, kit.settings, batch=2)
    assert first is not None and first.actions["pruned_jobs"] == 2 and first.actions["more"]
    second = await run_maintenance(kit.db, kit.settings, batch=2)
    assert second is not None and second.actions["pruned_jobs"] == 1


async def test_stale_partitions_are_reported(kit: Kit) -> None:
    await kit.put(2, partition="stuck")
    await kit.put(1, partition="busy")
    await kit.put(1, partition="held")
    await kit.put(1, partition="fresh")
    async with kit.db.transaction(immediate=True) as conn:
        await pause_partition(conn, kit.org_id, "held")
    await kit.age("run_at", 7200)  # everything waiting two hours…
    async with kit.db.transaction(immediate=True) as conn:
        await conn.execute(  # …but "busy" finished a job a minute ago, "fresh" just arrived
            update(jobs)
            .where(jobs.c.partition == "busy")
            .values(finished_at=db_now_plus(conn.dialect.name, -60))
        )
        await conn.execute(
            update(jobs)
            .where(jobs.c.partition == "fresh")
            .values(run_at=db_now_plus(conn.dialect.name, -1))
        )
    record = await run_maintenance(kit.db, kit.settings, stale_after_seconds=3600)
    assert record is not None
    assert record.actions["stale_partitions"] == 1
    assert record.actions["stale_partition_sample"] == ["stuck"]


async def test_a_recent_run_makes_the_next_skip(kit: Kit) -> None:
    assert await run_maintenance(kit.db, kit.settings, skip_if_ran_within=60) is not None
    assert await run_maintenance(kit.db, kit.settings, skip_if_ran_within=60) is None
    assert await run_maintenance(kit.db, kit.settings) is not None  # no gap asked: runs


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)  # advisory locks
async def test_concurrent_runs_do_not_overlap_on_postgresql(kit: Kit) -> None:
    async with kit.db.transaction() as holder:
        got = await holder.scalar(
            text("SELECT pg_try_advisory_xact_lock(hashtext(current_schema() || :name))"),
            {"name": ":" + LOCK_NAME},
        )
        assert got
        # Another worker's run, while this transaction holds the lock: skipped.
        assert await run_maintenance(kit.db, kit.settings, worker_id="w2") is None
    assert await run_maintenance(kit.db, kit.settings, worker_id="w2") is not None
    results = await asyncio.gather(
        *(
            run_maintenance(kit.db, kit.settings, worker_id=f"w{i}", skip_if_ran_within=60)
            for i in range(4)
        )
    )
    assert results == [None] * 4  # the run above was within 60 s


async def test_gathered_runs_with_a_gap_run_once(kit: Kit) -> None:
    results = await asyncio.gather(
        *(
            run_maintenance(kit.db, kit.settings, worker_id=f"w{i}", skip_if_ran_within=60)
            for i in range(4)
        )
    )
    assert sum(r is not None for r in results) == 1
    assert await _count(kit, maintenance_runs) == 1


async def test_a_failing_run_is_recorded_as_failed(kit: Kit) -> None:
    await kit.put()
    await kit.take()
    await kit.age("lease_expires_at", 1)
    # A real failure half-way through: the prune step finds its table gone.
    async with kit.db.transaction() as conn:
        await conn.execute(text("DROP TABLE job_errors"))
    record = await run_maintenance(kit.db, kit.settings, worker_id="w")
    assert record is not None and record.status == "failed"
    assert record.error and "job_errors" in record.error and record.actions == {}
    assert (await kit.status_counts()) == {"running": 1}  # the reap was rolled back
