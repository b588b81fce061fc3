"""Lease details a worker relies on: how far a heartbeat pushes the lease, the attempt number
an ended attempt reports (refunded or not), `release()` of a job asked to cancel, the run_at
of a delayed retry."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from valuerank.queue import (
    EventType,
    JobStatus,
    cancel_job,
    errors_of,
    heartbeat,
    release,
    retry_later,
)

if TYPE_CHECKING:
    from tests.queue.conftest import Kit


async def test_a_heartbeat_sets_the_lease_to_now_plus_its_length(kit: Kit) -> None:
    await kit.put()
    (job,) = await kit.take()  # leased for 30 s at the claim
    assert job.lease_expires_at is not None
    async with kit.db.transaction(immediate=True) as conn:
        assert (await heartbeat(conn, job.lease, lease_seconds=300)).held
    longer = (await kit.load(job.id)).lease_expires_at
    assert longer is not None
    # now + 300 s, measured from the claim's now + 30 s (a slow machine adds seconds, not 270)
    assert timedelta(seconds=265) < longer - job.lease_expires_at <= timedelta(seconds=300)
    async with kit.db.transaction(immediate=True) as conn:
        assert (await heartbeat(conn, job.lease, lease_seconds=60)).held
    shorter = (await kit.load(job.id)).lease_expires_at
    assert shorter is not None
    assert timedelta(seconds=235) < longer - shorter <= timedelta(seconds=240)


async def _last_event(kit: Kit) -> tuple[str, dict[str, Any]]:
    event = (await kit.events())[-1]
    return str(getattr(event.type, "value", event.type)), event.data


async def test_a_retry_reports_the_attempt_that_ended_refunded_or_not(kit: Kit) -> None:
    await kit.put()
    (job,) = await kit.take()
    assert job.attempts == 1
    async with kit.db.transaction(immediate=True) as conn:
        status = await retry_later(
            conn, job.lease, delay_seconds=0, error="boom", refund_attempt=True
        )
    assert status is JobStatus.QUEUED
    assert (await kit.load(job.id)).attempts == 0  # refunded
    kind, data = await _last_event(kit)
    assert kind == EventType.TASK_RETRYING.value
    assert data["attempt"] == 1 and data["delay_seconds"] == 0 and "boom" in data["error"]
    (again,) = await kit.take()
    assert again.attempts == 1  # the refunded attempt is counted again, not a second one
    async with kit.db.transaction(immediate=True) as conn:
        assert await retry_later(conn, again.lease, delay_seconds=0, error="twice")
        records = await errors_of(conn, job.id)
    assert [r.attempt for r in records] == [1, 1]
    assert (await kit.load(job.id)).attempts == 1  # spent this time
    assert (await _last_event(kit))[1]["attempt"] == 1
    (third,) = await kit.take()
    assert third.attempts == 2


async def test_a_retry_waits_its_delay_by_the_database_clock(kit: Kit) -> None:
    await kit.put()
    (job,) = await kit.take()
    assert job.started_at is not None
    async with kit.db.transaction(immediate=True) as conn:
        assert await retry_later(conn, job.lease, delay_seconds=120) is JobStatus.QUEUED
    later = await kit.load(job.id)
    assert later.run_at is not None
    assert timedelta(seconds=115) < later.run_at - job.started_at <= timedelta(seconds=125)
    assert await kit.take() == []  # not before its time


async def test_release_of_a_job_asked_to_cancel_cancels_it(kit: Kit) -> None:
    await kit.put()
    (job,) = await kit.take()
    async with kit.db.transaction(immediate=True) as conn:
        assert await cancel_job(conn, kit.org_id, job.id) is JobStatus.RUNNING
        assert await release(conn, job.lease)
    gone = await kit.load(job.id)
    assert gone.status is JobStatus.CANCELLED
    assert gone.lease_token is None and gone.finished_at is not None
    types = [str(getattr(e.type, "value", e.type)) for e in await kit.events()]
    assert types[-2:] == [EventType.TASK_CANCELLED.value, "partition_complete"]
    assert (await kit.events())[-2].data["reason"] == "released"
    assert await kit.take() == []
    assert await kit.slots_in_use() == {}
