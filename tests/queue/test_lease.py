"""Leases: heartbeats extend them and deliver cancellation; a lost lease changes nothing."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from valuerank.queue import (
    JobStatus,
    cancel,
    cancel_job,
    complete,
    errors_of,
    fail,
    heartbeat,
    reap,
    release,
    retry_later,
)
from valuerank.queue.job import Lease

if TYPE_CHECKING:
    from tests.queue.conftest import Kit


async def test_complete_stores_the_result(kit: Kit) -> None:
    await kit.put()
    (job,) = await kit.take()
    async with kit.db.transaction(immediate=True) as conn:
        assert await complete(conn, job.lease, {"answer": 42})
    done = await kit.load(job.id)
    assert done.status is JobStatus.SUCCEEDED
    assert done.result == {"answer": 42}
    assert done.lease_token is None and done.finished_at is not None
    # Completing twice is refused: the token is spent.
    async with kit.db.transaction(immediate=True) as conn:
        assert not await complete(conn, job.lease, {"answer": 0})
    assert (await kit.load(job.id)).result == {"answer": 42}


async def test_a_lost_lease_discards_the_result_and_changes_nothing(kit: Kit) -> None:
    await kit.put()
    (first,) = await kit.take(worker="slow")
    await kit.age("lease_expires_at", 5)
    async with kit.db.transaction(immediate=True) as conn:
        reaped = await reap(conn, kit.settings)
    assert reaped.requeued == [first.id]
    (second,) = await kit.take(worker="fast")
    assert second.id == first.id and second.lease_token != first.lease_token
    before = await kit.load(first.id)
    async with kit.db.transaction(immediate=True) as conn:
        assert not await complete(conn, first.lease, {"from": "slow"})
        assert not await fail(conn, first.lease, "late failure")
        assert await retry_later(conn, first.lease, delay_seconds=1) is None
        assert not await release(conn, first.lease)
        assert not await cancel(conn, first.lease)
        state = await heartbeat(conn, first.lease, lease_seconds=30)
        assert not state.held and state.should_stop
    assert await kit.load(first.id) == before
    async with kit.db.transaction(immediate=True) as conn:
        assert await complete(conn, second.lease, {"from": "fast"})
        assert len(await errors_of(conn, first.id)) == 1  # only the expiry, not "late failure"
    assert (await kit.load(first.id)).result == {"from": "fast"}


async def test_heartbeat_extends_the_lease_and_delivers_cancellation(kit: Kit) -> None:
    await kit.put()
    (job,) = await kit.take()
    await kit.age("lease_expires_at", 25)  # expired, but not reaped: still ours
    aged = (await kit.load(job.id)).lease_expires_at
    async with kit.db.transaction(immediate=True) as conn:
        state = await heartbeat(conn, job.lease, lease_seconds=30)
    assert state.held and not state.cancel_requested
    extended = (await kit.load(job.id)).lease_expires_at
    assert aged is not None and extended is not None
    assert extended - aged > timedelta(seconds=24)  # a full lease away again
    async with kit.db.transaction(immediate=True) as conn:
        assert await cancel_job(conn, kit.org_id, job.id) is JobStatus.RUNNING
        state = await heartbeat(conn, job.lease, lease_seconds=30)
        assert state.held and state.cancel_requested and state.should_stop
        assert await cancel(conn, job.lease)
    assert (await kit.load(job.id)).status is JobStatus.CANCELLED


async def test_a_forged_token_is_refused(kit: Kit) -> None:
    await kit.put()
    (job,) = await kit.take()
    async with kit.db.transaction(immediate=True) as conn:
        assert not await complete(conn, Lease(job.id, "not-the-token"), 1)
        assert not (await heartbeat(conn, Lease(job.id, "x"), lease_seconds=30)).held
    assert (await kit.load(job.id)).status is JobStatus.RUNNING


async def test_release_gives_the_job_back_without_spending_an_attempt(kit: Kit) -> None:
    await kit.put()
    (job,) = await kit.take()
    async with kit.db.transaction(immediate=True) as conn:
        assert await release(conn, job.lease)
    back = await kit.load(job.id)
    assert back.status is JobStatus.QUEUED and back.attempts == 0 and back.lease_token is None
    (again,) = await kit.take()
    assert again.id == job.id and again.attempts == 1


async def test_requeue_of_a_job_asked_to_cancel_cancels_it(kit: Kit) -> None:
    await kit.put()
    (job,) = await kit.take()
    async with kit.db.transaction(immediate=True) as conn:
        await cancel_job(conn, kit.org_id, job.id)
        assert await retry_later(conn, job.lease, delay_seconds=0) is JobStatus.CANCELLED
    assert (await kit.load(job.id)).status is JobStatus.CANCELLED
