"""The reaper: expired leases and overdue jobs, with their slots, errors and events."""

from __future__ import annotations

from typing import TYPE_CHECKING

from valuerank.queue import (
    ErrorCategory,
    JobStatus,
    QueueSettings,
    SlotScope,
    cancel_job,
    errors_of,
    heartbeat,
    reap,
    set_cap,
)

if TYPE_CHECKING:
    from tests.queue.conftest import Kit


async def test_an_expired_lease_counts_an_attempt(kit: Kit) -> None:
    (job_id,) = await kit.put(max_attempts=2)
    await kit.take()
    await kit.age("lease_expires_at", 1)
    async with kit.db.transaction(immediate=True) as conn:
        reaped = await reap(conn, kit.settings)
    assert reaped.requeued == [job_id] and reaped.total == 1
    job = await kit.load(job_id)
    assert job.status is JobStatus.QUEUED and job.attempts == 1 and job.lease_token is None
    # The second expiry spends the last attempt: dead letter.
    await kit.take()
    await kit.age("lease_expires_at", 1)
    async with kit.db.transaction(immediate=True) as conn:
        assert (await reap(conn, kit.settings)).failed == [job_id]
        errors = await errors_of(conn, job_id)
    assert [(e.attempt, e.category) for e in errors] == [
        (1, ErrorCategory.LEASE_EXPIRED),
        (2, ErrorCategory.LEASE_EXPIRED),
    ]
    job = await kit.load(job_id)
    assert job.status is JobStatus.FAILED and job.last_error
    assert "lease expired" in job.last_error
    assert [e.type for e in await kit.events()][-2:] == ["task_failed", "partition_complete"]


async def test_live_leases_are_left_alone(kit: Kit) -> None:
    await kit.put()
    (job,) = await kit.take()
    async with kit.db.transaction(immediate=True) as conn:
        assert (await reap(conn, kit.settings)).total == 0
        assert (await heartbeat(conn, job.lease, lease_seconds=30)).held


async def test_an_expired_job_asked_to_cancel_is_cancelled(kit: Kit) -> None:
    (job_id,) = await kit.put()
    await kit.take()
    async with kit.db.transaction(immediate=True) as conn:
        await cancel_job(conn, kit.org_id, job_id)
    await kit.age("lease_expires_at", 1)
    async with kit.db.transaction(immediate=True) as conn:
        assert (await reap(conn, kit.settings)).cancelled == [job_id]
    assert (await kit.load(job_id)).status is JobStatus.CANCELLED


async def test_max_runtime_fails_an_overdue_job_and_frees_its_slot(kit: Kit) -> None:
    settings = QueueSettings(lease_seconds=30, heartbeat_seconds=1, max_runtime_seconds=60)
    async with kit.db.transaction(immediate=True) as conn:
        await set_cap(conn, SlotScope.GLOBAL, 1)
    (job_id,) = await kit.put()
    (job,) = await kit.take()
    await kit.age("started_at", 61)
    async with kit.db.transaction(immediate=True) as conn:
        assert (await reap(conn, settings)).timed_out == [job_id]
        # The worker, still alive, finds out at its next heartbeat.
        assert not (await heartbeat(conn, job.lease, lease_seconds=30)).held
        (error,) = await errors_of(conn, job_id)
    assert error.category is ErrorCategory.TIMEOUT
    assert (await kit.load(job_id)).status is JobStatus.FAILED
    assert set((await kit.slots_in_use()).values()) == {0}
