"""What each way out of `running` writes, exactly: the job row, its error record, its event,
the slots it held, its rate bucket, the partition's completion; and what a heartbeat or a
lease-fenced call does to a job that is not (or no longer) the lease holder's. Pins the
outcomes the mutation study of queue/lease.py found unpinned (scripts/mutation.sh lease)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import psycopg
import pytest
from sqlalchemy import func, select, update

from valuerank.db.tables import jobs
from valuerank.queue import (
    EventType,
    JobSpec,
    JobStatus,
    SlotScope,
    cancel,
    cancel_job,
    complete,
    enqueue_many,
    errors_of,
    fail,
    heartbeat,
    release,
    retry_later,
    set_cap,
)
from valuerank.queue.dialect import db_now
from valuerank.queue.errors import ErrorCategory
from valuerank.queue.job import Lease
from valuerank.queue.lease import LeaseState
from valuerank.queue.ratelimit import bucket_key, bucket_state, configure_bucket, list_buckets
from valuerank.queue.slots import GLOBAL_KEY
from valuerank.queue.wakeup import JOBS_CHANNEL

if TYPE_CHECKING:
    from tests.queue.conftest import Kit


def _type(event: Any) -> str:
    return str(getattr(event.type, "value", event.type))


def _counts(**nonzero: int) -> dict[str, int]:
    return {s.value: nonzero.get(s.value, 0) for s in JobStatus}


async def _capped(kit: Kit) -> None:
    """A global cap, so that every claimed job holds one slot."""
    async with kit.db.transaction(immediate=True) as conn:
        await set_cap(conn, SlotScope.GLOBAL, 5)


async def _sql_check(kit: Kit, job_id: str) -> tuple[bool, bool]:
    """(result IS NULL, started_at <= finished_at <= now) compared by the database itself:
    on SQLite the stored text must be the queue's clock format, or these comparisons lie."""
    async with kit.db.transaction() as conn:
        row = (
            await conn.execute(
                select(
                    jobs.c.result.is_(None).label("no_result"),
                    (
                        (jobs.c.finished_at >= jobs.c.started_at)
                        & (jobs.c.finished_at <= db_now(conn.dialect.name))
                    ).label("ordered"),
                ).where(jobs.c.id == job_id)
            )
        ).one()
    return bool(row.no_result), bool(row.ordered)


async def test_fail_keeps_the_error_everywhere_and_finishes_the_partition(kit: Kit) -> None:
    await _capped(kit)
    await kit.put()
    (job,) = await kit.take()
    assert await kit.slots_in_use() == {GLOBAL_KEY: 1}
    error = ValueError("bad input")
    async with kit.db.transaction(immediate=True) as conn:
        assert await fail(conn, job.lease, error) is True
        (record,) = await errors_of(conn, job.id)
    text = "permanent: ValueError: bad input"
    failed = await kit.load(job.id)
    assert failed.status is JobStatus.FAILED and failed.last_error == text
    assert failed.lease_token is None and failed.lease_expires_at is None
    assert failed.finished_at is not None and failed.attempts == 1
    assert (await _sql_check(kit, job.id))[1]
    assert (record.attempt, record.category) == (1, ErrorCategory.PERMANENT)
    assert (record.error_class, record.message) == ("ValueError", "bad input")
    assert await kit.slots_in_use() == {GLOBAL_KEY: 0}
    *_, ended, finished = await kit.events()
    assert _type(ended) == EventType.TASK_FAILED.value
    assert ended.data["error"] == text and ended.data["attempt"] == 1
    assert ended.data["job_id"] == job.id and ended.data["item_key"] == "item-0"
    assert ended.data["counts"] == _counts(failed=1)
    assert (ended.data["progress"], ended.data["done"], ended.data["total"]) == ("1/1", 1, 1)
    assert _type(finished) == "partition_complete" and finished.seq == ended.seq + 1
    # A lost lease: refused, nothing written.
    async with kit.db.transaction(immediate=True) as conn:
        assert await fail(conn, job.lease, "again") is False
        assert len(await errors_of(conn, job.id)) == 1


async def test_fail_names_its_category_and_a_plain_message(kit: Kit) -> None:
    await kit.put(2)
    (job, _) = await kit.take(2)
    async with kit.db.transaction(immediate=True) as conn:
        assert await fail(conn, job.lease, "gave up", category=ErrorCategory.TIMEOUT)
        (record,) = await errors_of(conn, job.id)
    assert (await kit.load(job.id)).last_error == "timeout: Error: gave up"
    assert (record.category, record.error_class, record.message) == (
        ErrorCategory.TIMEOUT,
        "Error",
        "gave up",
    )
    ended = (await kit.events())[-1]  # the other job still runs: no partition completion
    assert _type(ended) == EventType.TASK_FAILED.value
    assert ended.data["error"] == "timeout: Error: gave up"
    assert ended.data["counts"] == _counts(running=1, failed=1)
    assert ended.data["progress"] == "1/2"


async def test_a_retry_with_an_error_records_it_and_releases_its_slot(kit: Kit) -> None:
    await _capped(kit)
    await kit.put()
    (job,) = await kit.take()
    async with kit.db.transaction(immediate=True) as conn:
        status = await retry_later(conn, job.lease, delay_seconds=1.23456, error=OSError("down"))
        (record,) = await errors_of(conn, job.id)
    assert status is JobStatus.QUEUED
    back = await kit.load(job.id)
    assert back.last_error == "transient: OSError: down"
    assert back.finished_at is None and back.lease_token is None
    assert back.lease_expires_at is None
    assert (record.attempt, record.category, record.error_class, record.message) == (
        1,
        ErrorCategory.TRANSIENT,
        "OSError",
        "down",
    )
    assert await kit.slots_in_use() == {GLOBAL_KEY: 0}
    ended = (await kit.events())[-1]
    assert _type(ended) == EventType.TASK_RETRYING.value
    assert ended.data["reason"] == "transient"  # the category, no reason given
    assert ended.data["error"] == "transient: OSError: down"
    assert ended.data["delay_seconds"] == 1.235  # rounded to milliseconds
    assert ended.data["counts"] == _counts(queued=1)
    assert ended.data["progress"] == "0/1"


async def test_a_retry_without_an_error_records_none(kit: Kit) -> None:
    await kit.put(provider="acme", model="m1")
    (job,) = await kit.take()
    async with kit.db.transaction(immediate=True) as conn:
        assert await retry_later(conn, job.lease, delay_seconds=0) is JobStatus.QUEUED
        assert await errors_of(conn, job.id) == []
        assert await list_buckets(conn) == []  # no 429: no bucket learnt, none blocked
    assert (await kit.load(job.id)).last_error is None
    data = (await kit.events())[-1].data
    assert "reason" not in data and "error" not in data
    (again,) = await kit.take()
    async with kit.db.transaction(immediate=True) as conn:
        assert await retry_later(conn, again.lease, delay_seconds=0, reason="waiting")
    assert (await kit.events())[-1].data["reason"] == "waiting"


async def test_a_429_blocks_the_providers_bucket(kit: Kit) -> None:
    await kit.put(provider="acme", model="m1")
    (job,) = await kit.take()
    asked: list[bool] = []

    def left() -> float:
        asked.append(True)
        return 40.0

    async with kit.db.transaction(immediate=True) as conn:
        status = await retry_later(
            conn,
            job.lease,
            delay_seconds=40,
            error="429",
            category=ErrorCategory.RATE_LIMITED,
            refund_attempt=True,
            block_bucket_seconds=left,
        )
        learnt = await bucket_state(conn, bucket_key("acme"))
    assert status is JobStatus.QUEUED and asked == [True]
    assert learnt is not None and learnt.rate_limited_total == 1 and learnt.blocked
    assert learnt.blocked_until is not None
    assert 35 < (learnt.blocked_until - learnt.now).total_seconds() <= 40
    back = await kit.load(job.id)
    assert back.last_error == "rate_limited: Error: 429" and back.attempts == 0
    assert (await kit.events())[-1].data["reason"] == "rate_limited"


async def test_a_retry_of_a_job_asked_to_cancel_finishes_it(kit: Kit) -> None:
    await _capped(kit)
    await kit.put()
    (job,) = await kit.take()
    async with kit.db.transaction(immediate=True) as conn:
        await cancel_job(conn, kit.org_id, job.id)
        assert await retry_later(conn, job.lease, delay_seconds=5) is JobStatus.CANCELLED
    gone = await kit.load(job.id)
    assert gone.finished_at is not None and gone.lease_expires_at is None
    assert (await _sql_check(kit, job.id))[1]
    assert await kit.slots_in_use() == {GLOBAL_KEY: 0}
    *_, ended, finished = await kit.events()
    assert _type(ended) == EventType.TASK_CANCELLED.value
    assert ended.data["counts"] == _counts(cancelled=1)
    assert _type(finished) == "partition_complete"


async def test_complete_passes_its_event_data_and_stores_no_result_as_null(kit: Kit) -> None:
    await kit.put(2)
    (job, other) = await kit.take(2)
    async with kit.db.transaction(immediate=True) as conn:
        assert await complete(conn, job.lease, event_data={"score": 3, "skip": None}) is True
    done = await kit.load(job.id)
    assert done.status is JobStatus.SUCCEEDED and done.lease_expires_at is None
    assert await _sql_check(kit, job.id) == (True, True)  # SQL NULL, not JSON null
    ended = (await kit.events())[-1]
    assert _type(ended) == EventType.TASK_COMPLETE.value
    assert ended.data == {
        "job_id": job.id,
        "kind": "echo",
        "item_key": job.item_key,
        "provider": None,
        "model": None,
        "score": 3,
        "attempt": 1,
        "progress": "1/2",
        "done": 1,
        "total": 2,
        "counts": _counts(running=1, succeeded=1),
    }
    async with kit.db.transaction(immediate=True) as conn:
        assert await complete(conn, other.lease, {"a": 1}, event_data={"score": 4}) is True
    *_, last, finished = await kit.events()
    assert last.data["score"] == 4 and last.data["counts"] == _counts(succeeded=2)
    assert _type(finished) == "partition_complete"


async def test_complete_of_a_job_holding_a_slot_releases_it(kit: Kit) -> None:
    await _capped(kit)
    await kit.put()
    (job,) = await kit.take()
    async with kit.db.transaction(immediate=True) as conn:
        assert await complete(conn, job.lease, event_data={"score": 5}) is True
    assert (await kit.load(job.id)).status is JobStatus.SUCCEEDED
    assert await _sql_check(kit, job.id) == (True, True)
    assert await kit.slots_in_use() == {GLOBAL_KEY: 0}
    *_, ended, finished = await kit.events()
    assert ended.data["score"] == 5 and ended.data["attempt"] == 1
    assert ended.data["counts"] == _counts(succeeded=1)
    assert _type(finished) == "partition_complete"
    async with kit.db.transaction(immediate=True) as conn:
        assert await complete(conn, job.lease) is False


async def test_complete_corrects_the_token_reservation_with_the_real_usage(kit: Kit) -> None:
    async with kit.db.transaction(immediate=True) as conn:
        key = await configure_bucket(conn, "acme", tpm=600)
        spec = JobSpec(
            kind="echo",
            org_id=kit.org_id,
            partition="run-1",
            payload={"estimated_tokens": 100},
            provider="acme",
            model="m1",
        )
        await enqueue_many(conn, [spec, spec])
    first, second = await kit.take(2)
    async with kit.db.transaction(immediate=True) as conn:
        reserved = await bucket_state(conn, key)
        assert await complete(conn, first.lease, usage_tokens=400) is True
        corrected = await bucket_state(conn, key)
        assert await complete(conn, second.lease, event_data={"n": 2}) is True
        untouched = await bucket_state(conn, key)
    assert reserved is not None and corrected is not None and untouched is not None
    assert reserved.available_tokens is not None and corrected.available_tokens is not None
    assert untouched.available_tokens is not None
    # 300 tokens more than reserved are taken back (the refill adds 10 a second meanwhile).
    assert -300 <= corrected.available_tokens - reserved.available_tokens < -250
    # Without a reported usage nothing is corrected.
    assert 0 <= untouched.available_tokens - corrected.available_tokens < 50
    assert (await kit.events())[-2].data["n"] == 2


async def test_a_lost_heartbeat_holds_nothing_and_asks_nothing(kit: Kit) -> None:
    await kit.put(2)
    mine, other = await kit.take(2)
    before = await kit.load(mine.id)
    async with kit.db.transaction(immediate=True) as conn:
        # Another job's id with my token: neither job is mine under that lease.
        state = await heartbeat(conn, Lease(other.id, mine.lease.token), lease_seconds=300)
    assert state == LeaseState(held=False, cancel_requested=False)
    assert (await kit.load(mine.id)).lease_expires_at == before.lease_expires_at
    async with kit.db.transaction(immediate=True) as conn:
        await cancel_job(conn, kit.org_id, mine.id)
        assert await cancel(conn, mine.lease)
        state = await heartbeat(conn, mine.lease, lease_seconds=300)
    assert state == LeaseState(held=False, cancel_requested=False)  # asked, but not mine
    assert state.should_stop


async def test_a_job_moved_out_of_running_behind_the_queues_back_is_not_the_leases(
    kit: Kit,
) -> None:
    """Status changed by plain SQL, the token left in place: every fenced call refuses."""
    await kit.put(2)
    queued, failed = await kit.take(2)
    async with kit.db.transaction(immediate=True) as conn:
        for job, status in ((queued, JobStatus.QUEUED), (failed, JobStatus.FAILED)):
            await conn.execute(update(jobs).where(jobs.c.id == job.id).values(status=status))
    async with kit.db.transaction(immediate=True) as conn:
        assert not (await heartbeat(conn, queued.lease, lease_seconds=300)).held
        assert await cancel(conn, queued.lease) is False
        assert await retry_later(conn, failed.lease, delay_seconds=0) is None
        assert await retry_later(conn, queued.lease, delay_seconds=0) is None
    assert (await kit.load(queued.id)).status is JobStatus.QUEUED
    assert (await kit.load(failed.id)).status is JobStatus.FAILED
    async with kit.db.transaction() as conn:
        leases = await conn.scalar(select(func.count()).where(jobs.c.lease_expires_at.is_not(None)))
    assert leases == 2  # untouched


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)  # LISTEN/NOTIFY
async def test_a_released_job_wakes_the_workers(kit: Kit) -> None:
    await kit.put()
    (job,) = await kit.take()
    dsn = kit.db.url.url.set(drivername="postgresql").render_as_string(hide_password=False)
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as listener:
        await listener.execute(f"LISTEN {JOBS_CHANNEL}")
        async with kit.db.transaction() as conn:
            assert await release(conn, job.lease) is True
        notice = await asyncio.wait_for(anext(listener.notifies()), timeout=10)
    assert notice.payload == ""  # any kind: another worker may take it at once
