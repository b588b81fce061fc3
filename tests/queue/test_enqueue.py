"""Enqueue: idempotent on (partition, item_key), priorities, run_at, defaults."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from valuerank.db import Database
from valuerank.errors import ConflictError, InvalidInputError
from valuerank.orgs import ensure_org
from valuerank.queue import JobSpec, JobStatus, enqueue, enqueue_many
from valuerank.queue.enqueue import priority_value

if TYPE_CHECKING:
    from tests.queue.conftest import Kit


async def test_enqueue_twice_enqueues_nothing_new(db: Database, org_id: str) -> None:
    spec = JobSpec(kind="echo", org_id=org_id, partition="run-1", item_key="s1:m1:0")
    async with db.transaction(immediate=True) as conn:
        first = await enqueue(conn, spec)
    async with db.transaction(immediate=True) as conn:
        again = await enqueue(conn, spec)
        batch = await enqueue_many(conn, [spec, JobSpec(kind="echo", org_id=org_id)])
    assert first.enqueued and not again.enqueued
    assert again.job_id == first.job_id
    assert [e.enqueued for e in batch] == [False, True]
    assert batch[0].job_id == first.job_id


async def test_duplicates_within_one_batch_are_reported(db: Database, org_id: str) -> None:
    specs = [JobSpec(kind="echo", org_id=org_id, item_key=k) for k in ("a", "b", "a")]
    async with db.transaction(immediate=True) as conn:
        out = await enqueue_many(conn, specs)
    assert [e.enqueued for e in out] == [True, True, False]
    assert out[0].job_id == out[2].job_id


async def test_same_item_key_in_another_partition_is_another_job(db: Database, org_id: str) -> None:
    async with db.transaction(immediate=True) as conn:
        a = await enqueue(conn, JobSpec(kind="echo", org_id=org_id, partition="p1", item_key="k"))
        b = await enqueue(conn, JobSpec(kind="echo", org_id=org_id, partition="p2", item_key="k"))
    assert a.enqueued and b.enqueued and a.job_id != b.job_id


async def test_a_partition_belongs_to_one_organisation(db: Database, org_id: str) -> None:
    async with db.transaction(immediate=True) as conn:
        other = await ensure_org(conn, "other")
        await enqueue(conn, JobSpec(kind="echo", org_id=other, partition="p", item_key="k"))
        for key in ("k", "another"):
            with pytest.raises(ConflictError, match="another organisation"):
                await enqueue(
                    conn, JobSpec(kind="echo", org_id=org_id, partition="p", item_key=key)
                )
        # Without a partition, each organisation has its own default one.
        mine = await enqueue(conn, JobSpec(kind="echo", org_id=org_id, item_key="k"))
        theirs = await enqueue(conn, JobSpec(kind="echo", org_id=other, item_key="k"))
    assert mine.enqueued and theirs.enqueued
    assert mine.partition == f"default:{org_id}" != theirs.partition


async def test_stored_job_has_its_defaults_and_labels(kit: Kit) -> None:
    (job_id,) = await kit.put(priority="high", max_attempts=5, provider="openai", model="gpt-4o")
    job = await kit.load(job_id)
    assert job.status is JobStatus.QUEUED
    assert (job.priority, job.max_attempts, job.attempts) == (10, 5, 0)
    assert (job.provider, job.model, job.payload) == ("openai", "gpt-4o", {"i": 0})
    assert job.lease_token is None and not job.cancel_requested
    assert job.run_at.tzinfo is not None


def test_priority_names_and_numbers() -> None:
    assert priority_value("low") < priority_value("normal") < priority_value("high")
    assert priority_value(42) == 42
    with pytest.raises(InvalidInputError):
        priority_value("urgent")


async def test_invalid_specs_are_refused(db: Database, org_id: str) -> None:
    async with db.transaction(immediate=True) as conn:
        with pytest.raises(InvalidInputError):
            await enqueue(conn, JobSpec(kind="echo", org_id=org_id, max_attempts=0))
        with pytest.raises(InvalidInputError):
            await enqueue(
                conn,
                JobSpec(kind="echo", org_id=org_id, run_at=datetime.now(UTC), delay_seconds=1),
            )
        with pytest.raises(ValueError, match="time zone"):
            await enqueue(conn, JobSpec(kind="echo", org_id=org_id, run_at=datetime(2030, 1, 1)))


async def test_run_at_and_delay_hold_jobs_back(kit: Kit) -> None:
    later = datetime.now(UTC) + timedelta(hours=1)
    await kit.put(prefix="at", run_at=later)
    await kit.put(prefix="delay", delay_seconds=3600)
    (now_id,) = await kit.put(prefix="now")
    claimed = await kit.take(10)
    assert [j.id for j in claimed] == [now_id]
    stored = await kit.load(claimed[0].id)
    assert stored.status is JobStatus.RUNNING


async def test_bulk_enqueue_is_chunked(kit: Kit) -> None:
    ids = await kit.put(1234)
    assert len(set(ids)) == 1234
    again = await kit.put(1234)
    assert again == ids
