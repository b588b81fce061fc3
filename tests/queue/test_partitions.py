"""The partition API (queue/partitions.py) on SQLite and PostgreSQL: what the domain asks of
the queue instead of reading its tables."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from valuerank.db.tables import events, jobs, queue_controls
from valuerank.orgs import ensure_org
from valuerank.queue import complete
from valuerank.queue.events import count_partition, partition_progress
from valuerank.queue.partitions import (
    PartitionBusy,
    count_events,
    delete_jobs,
    delete_partitions,
    has_live_jobs,
    has_running_jobs,
    jobs_of,
    last_event,
    live_jobs_up_to,
    status_counts,
)
from valuerank.queue.states import JobStatus

from .conftest import Kit


async def _rows(kit: Kit, partition: str) -> tuple[int, int, int]:
    """(jobs, events, control rows) of a partition, read from the tables themselves."""
    async with kit.db.transaction() as conn:
        return (
            int(await conn.scalar(select(func.count()).where(jobs.c.partition == partition)) or 0),
            int(
                await conn.scalar(select(func.count()).where(events.c.partition == partition)) or 0
            ),
            int(
                await conn.scalar(select(func.count()).where(queue_controls.c.key == partition))
                or 0
            ),
        )


async def test_deleting_partitions_leaves_nothing_of_them_and_waits_for_running_jobs(
    kit: Kit,
) -> None:
    await kit.put(2, partition="run-a")
    await kit.put(1, partition="analysis:run-a")
    await kit.put(1, partition="run-b")
    (running,) = await kit.take(1)  # the oldest job: one of run-a
    assert running.partition == "run-a"
    gone = ["run-a", "analysis:run-a"]
    async with kit.db.transaction() as conn:
        assert await has_running_jobs(conn, gone, org_id=kit.org_id)
        with pytest.raises(PartitionBusy):
            await delete_partitions(conn, kit.org_id, gone)
    async with kit.db.transaction(immediate=True) as conn:
        assert await complete(conn, running.lease, {"ok": True})
    async with kit.db.transaction(immediate=True) as conn:
        other = await ensure_org(conn, "other")
        # Another organisation's call deletes nothing of mine.
        nothing = await delete_partitions(conn, other, gone)
        assert (nothing.jobs, nothing.events, nothing.controls) == (0, 0, 0)
        deleted = await delete_partitions(conn, kit.org_id, gone)
    assert deleted.jobs == 3 and deleted.events >= 2 and deleted.controls == 2
    assert await _rows(kit, "run-a") == (0, 0, 0)
    assert await _rows(kit, "analysis:run-a") == (0, 0, 0)
    assert (await _rows(kit, "run-b"))[0] == 1  # another partition is left alone


async def test_deleting_finished_jobs_of_a_kind_keeps_the_counters_true(kit: Kit) -> None:
    await kit.put(3, partition="run-1", kind="judge", prefix="j")
    await kit.put(2, partition="run-1", kind="echo", prefix="e")
    claimed = await kit.take(2, kinds=["judge"])
    async with kit.db.transaction(immediate=True) as conn:
        for job in claimed:
            assert await complete(conn, job.lease, None)
    async with kit.db.transaction(immediate=True) as conn:
        with pytest.raises(ValueError, match="finished"):
            await delete_jobs(conn, kit.org_id, "run-1", kind="judge", statuses=[JobStatus.QUEUED])
        assert await delete_jobs(conn, kit.org_id, "run-1", kind="judge") == 2
        counters = await partition_progress(conn, "run-1")
        counted = await count_partition(conn, "run-1")
        left = await status_counts(conn, "run-1", org_id=kit.org_id)
        others = await status_counts(conn, "run-1", other_than_kind="judge")
    assert counters.counts == counted.counts
    assert left == {"queued": 3}  # the queued judge and both echoes stay
    assert others == {"queued": 2}


async def test_live_jobs_reads_and_events(kit: Kit) -> None:
    await kit.put(5, partition="run-1", kind="probe", prefix="probe:s")
    async with kit.db.transaction() as conn:
        assert await has_live_jobs(conn, "run-1", org_id=kit.org_id)
        assert not await has_live_jobs(conn, "run-2")
        assert await live_jobs_up_to(conn, kit.org_id, "run-1", "probe", 3) == 3
        assert await live_jobs_up_to(conn, kit.org_id, "run-1", "probe", 10) == 5
        listed = await jobs_of(conn, kit.org_id, "run-1", item_key_prefix="probe:s-1")
    assert [j.item_key for j in listed] == ["probe:s-1"]
    (job,) = await kit.take(1)
    async with kit.db.transaction() as conn:
        assert await live_jobs_up_to(conn, kit.org_id, "run-1", "probe", 10) == 5
        assert await has_running_jobs(conn, "run-1")
    async with kit.db.transaction(immediate=True) as conn:
        assert await complete(conn, job.lease, None)
    async with kit.db.transaction() as conn:
        started = await count_events(conn, kit.org_id, "run-1", types=["task_started"])
        done = await count_events(
            conn, kit.org_id, "run-1", types=["task_complete"], data={"kind": "probe"}
        )
        none = await count_events(
            conn, kit.org_id, "run-1", types=["task_complete"], data={"kind": "judge"}
        )
        last = await last_event(conn, kit.org_id, "run-1", types=["task_started"])
        before = await last_event(conn, kit.org_id, "run-1", types=["task_complete"], up_to=1)
    assert started == {"task_started": 1} and done == {"task_complete": 1} and none == {}
    assert last is not None and last.data["job_id"] == job.id
    assert before is None
