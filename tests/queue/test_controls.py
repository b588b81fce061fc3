"""Pause/resume/cancel a partition; pause/resume the queue and a provider; requeue failures."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from valuerank.orgs import ensure_org
from valuerank.queue import (
    EventType,
    JobStatus,
    Permanent,
    SlotScope,
    cancel,
    cancel_job,
    cancel_partition,
    complete,
    heartbeat,
    pause_org,
    pause_partition,
    pause_provider,
    pause_queue,
    queue_status,
    requeue_failed,
    resume_org,
    resume_partition,
    resume_provider,
    resume_queue,
    set_cap,
    settle_error,
)
from valuerank.queue.controls import org_paused, paused
from valuerank.queue.pending import seconds_until_due

if TYPE_CHECKING:
    from tests.queue.conftest import Kit


async def test_pause_and_resume_a_partition(kit: Kit) -> None:
    await kit.put(2, partition="run-1")
    (other,) = await kit.put(partition="run-2", prefix="o")
    async with kit.db.transaction(immediate=True) as conn:
        assert await pause_partition(conn, kit.org_id, "run-1")
        assert not await pause_partition(conn, kit.org_id, "run-1")  # already paused
        assert (await paused(conn))["partition"] == ["run-1"]
    assert [j.id for j in await kit.take(5)] == [other]
    async with kit.db.transaction(immediate=True) as conn:
        assert await resume_partition(conn, kit.org_id, "run-1")
        assert not await resume_partition(conn, kit.org_id, "run-1")
    assert len(await kit.take(5)) == 2
    types = [e.type for e in await kit.events("run-1")]
    assert types[:2] == ["partition_paused", "partition_resumed"]


async def test_another_organisation_cannot_pause_my_partition(kit: Kit) -> None:
    await kit.put()
    async with kit.db.transaction(immediate=True) as conn:
        await pause_partition(conn, kit.org_id, "run-1")
        intruder = await ensure_org(conn, "intruder")
        assert not await resume_partition(conn, intruder, "run-1")
    assert await kit.take() == []


async def test_pause_and_resume_the_queue(kit: Kit) -> None:
    await kit.put(2)
    async with kit.db.transaction(immediate=True) as conn:
        assert await pause_queue(conn)
    assert await kit.take(5) == []
    async with kit.db.transaction(immediate=True) as conn:
        assert await resume_queue(conn)
    assert len(await kit.take(5)) == 2


@pytest.mark.parametrize("capped", [False, True], ids=["fast-path", "general-path"])
async def test_pause_and_resume_one_organisation(kit: Kit, capped: bool) -> None:
    async with kit.db.transaction(immediate=True) as conn:
        other = await ensure_org(conn, "other")
        if capped:  # a cap sends PostgreSQL's claim down its general statement
            await set_cap(conn, SlotScope.GLOBAL, 1000)
    await kit.put(2, partition="mine-1")
    theirs = await kit.put(2, prefix="t", partition="theirs-1", org_id=other)
    async with kit.db.transaction(immediate=True) as conn:
        assert await pause_org(conn, kit.org_id)
        assert not await pause_org(conn, kit.org_id)
        assert await org_paused(conn, kit.org_id) and not await org_paused(conn, other)
        status = await queue_status(conn, org_id=kit.org_id)
        assert status.org_paused and not status.paused
        assert await seconds_until_due(conn, ["mine-1"]) is None
    assert sorted(j.id for j in await kit.take(5)) == sorted(theirs)
    async with kit.db.transaction(immediate=True) as conn:
        assert await resume_org(conn, kit.org_id)
        assert not await resume_org(conn, kit.org_id)
    assert {j.partition for j in await kit.take(5)} == {"mine-1"}


async def test_pause_and_resume_a_provider(kit: Kit) -> None:
    await kit.put(2, prefix="a", provider="openai")
    (b,) = await kit.put(prefix="b", provider="anthropic")
    (c,) = await kit.put(prefix="c")
    async with kit.db.transaction(immediate=True) as conn:
        assert await pause_provider(conn, "openai")
    assert {j.id for j in await kit.take(5)} == {b, c}
    async with kit.db.transaction(immediate=True) as conn:
        assert await resume_provider(conn, "openai")
    assert len(await kit.take(5)) == 2


async def test_cancel_a_partition(kit: Kit) -> None:
    await kit.put(5)
    (other,) = await kit.put(partition="run-2", prefix="o")
    running = await kit.take(2)
    async with kit.db.transaction(immediate=True) as conn:
        result = await cancel_partition(conn, kit.org_id, "run-1")
        assert (result.cancelled, result.stopping) == (3, 2)
        # Running jobs learn it at their next heartbeat.
        state = await heartbeat(conn, running[0].lease, lease_seconds=30)
        assert state.cancel_requested
    assert await kit.status_counts() == {"cancelled": 3, "running": 2, "queued": 1}
    # Nothing more is claimed from it; a job added late is cancelled at once (it would wait
    # forever: issue 21); other partitions run.
    await kit.put(prefix="late")
    assert await kit.status_counts() == {"cancelled": 4, "running": 2, "queued": 1}
    assert [j.id for j in await kit.take(5)] == [other]
    async with kit.db.transaction(immediate=True) as conn:
        assert await cancel(conn, running[0].lease)
    types = [e.type for e in await kit.events()]
    assert types.count(EventType.PARTITION_CANCELLED) == 1
    assert types.count(EventType.PARTITION_COMPLETE) == 0  # a job is still running
    async with kit.db.transaction(immediate=True) as conn:
        assert await complete(conn, running[1].lease, "finished anyway")
    events = await kit.events()
    assert events[-1].type == "partition_complete"
    assert events[-1].data["counts"] == {
        "queued": 0,
        "running": 0,
        "succeeded": 1,
        "failed": 0,
        "cancelled": 5,
    }


async def test_resume_reopens_a_cancelled_partition(kit: Kit) -> None:
    await kit.put()
    async with kit.db.transaction(immediate=True) as conn:
        await cancel_partition(conn, kit.org_id, "run-1")
    await kit.put(prefix="late")  # enqueued while cancelled: cancelled at once
    assert await kit.take() == []
    async with kit.db.transaction(immediate=True) as conn:
        assert await resume_partition(conn, kit.org_id, "run-1")
    await kit.put(prefix="rerun")
    assert len(await kit.take(5)) == 1
    assert await kit.status_counts() == {"cancelled": 2, "running": 1}


async def test_cancel_one_job(kit: Kit) -> None:
    queued, running_id = await kit.put(2)
    (running,) = await kit.take()
    assert running.id == queued  # the oldest
    async with kit.db.transaction(immediate=True) as conn:
        assert await cancel_job(conn, kit.org_id, running_id) is JobStatus.CANCELLED
        assert await cancel_job(conn, kit.org_id, running.id) is JobStatus.RUNNING
    assert (await kit.load(running.id)).cancel_requested


async def test_requeue_failed_jobs_one_by_one_or_per_partition(kit: Kit) -> None:
    ids = await kit.put(3, max_attempts=1)
    for job in await kit.take(3):
        async with kit.db.transaction(immediate=True) as conn:
            await settle_error(conn, job, Permanent("bad"), settings=kit.settings)
    async with kit.db.transaction(immediate=True) as conn:
        assert await requeue_failed(conn, kit.org_id, job_id=ids[0]) == [ids[0]]
        assert sorted(await requeue_failed(conn, kit.org_id, partition="run-1")) == sorted(ids[1:])
        with pytest.raises(ValueError):
            await requeue_failed(conn, kit.org_id)
    job = await kit.load(ids[0])
    assert job.status is JobStatus.QUEUED and job.attempts == 0 and job.finished_at is None
    assert len(await kit.take(5)) == 3
    assert [e.type for e in await kit.events()].count(EventType.TASK_REQUEUED) == 3
