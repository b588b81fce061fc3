"""`complete_many` on PostgreSQL: the one-statement completion of a batch (the worker's group
commit). Its events are numbered in job-id order and show the counts as if the jobs had been
completed one after the other; a lost lease is refused; jobs the statement must not complete
(slots, a TPM bucket with a reported usage) come back None, untouched; counters gone negative
are recounted; webhooks get their notifications; the last job finishes the partition. SQLite
completes one job at a time (`_complete_general`), pinned by test_lease_outcomes.py."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy import select, update

from valuerank.db.tables import jobs, queue_controls
from valuerank.queue import JobSpec, JobStatus, SlotScope, complete, enqueue_many, set_cap
from valuerank.queue.job import Lease
from valuerank.queue.lease import Completion, complete_many
from valuerank.queue.outbox import list_outbox, register_webhook
from valuerank.queue.ratelimit import configure_bucket

if TYPE_CHECKING:
    from tests.queue.conftest import Kit

pytestmark = pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)


def _counts(**nonzero: int) -> dict[str, int]:
    return {s.value: nonzero.get(s.value, 0) for s in JobStatus}


def _type(event: Any) -> str:
    return str(getattr(event.type, "value", event.type))


async def _completed(kit: Kit, since: int) -> list[Any]:
    return [e for e in await kit.events() if e.seq > since and _type(e) == "task_complete"]


async def _last_seq(kit: Kit) -> int:
    return max(e.seq for e in await kit.events())


async def _hook(kit: Kit) -> None:
    async with kit.db.transaction() as conn:
        await register_webhook(
            conn, kit.org_id, "http://example.invalid/done", event_types=["task_complete"]
        )


async def _break_counters(kit: Kit) -> None:
    """A counter gone negative: jobs were changed behind the queue's back."""
    async with kit.db.transaction() as conn:
        await conn.execute(
            update(queue_controls)
            .where(queue_controls.c.key == "run-1")
            .values(jobs_cancelled=-2, jobs_queued=queue_controls.c.jobs_queued + 5)
        )


def _expected(job: Any, k: int, n: int, extra: dict[str, Any], **counts: int) -> dict[str, Any]:
    """A task_complete event's data for the k-th of n jobs of a batch, n of n total."""
    return {
        "job_id": job.id,
        "kind": "echo",
        "item_key": job.item_key,
        "provider": None,
        "model": None,
        **extra,
        "attempt": 1,
        "progress": f"{k}/{n}",
        "done": k,
        "total": n,
        "counts": _counts(**counts),
    }


@pytest.mark.parametrize("broken", [False, True], ids=["counted", "recounted"])
async def test_a_batch_completes_in_job_id_order_and_finishes_the_partition(
    kit: Kit, broken: bool
) -> None:
    await kit.put(3)
    claimed = sorted(await kit.take(3), key=lambda j: j.id)
    if broken:
        await _break_counters(kit)
    since = await _last_seq(kit)
    batch = [  # handed in reverse: the events still follow the job ids
        Completion(j.lease, {"n": i}, event_data={"i": i, "none": None})
        for i, j in reversed(list(enumerate(claimed)))
    ]
    async with kit.db.transaction() as conn:
        outcome = await complete_many(conn, batch)
    assert outcome == {j.id: True for j in claimed}
    for i, j in enumerate(claimed):
        done = await kit.load(j.id)
        assert done.status is JobStatus.SUCCEEDED and done.result == {"n": i}
        assert done.lease_token is None and done.lease_expires_at is None
        assert done.finished_at is not None
    events = await _completed(kit, since)
    assert [e.seq for e in events] == [since + 1, since + 2, since + 3]
    assert [e.data for e in events] == [
        _expected(j, k, 3, {"i": k - 1}, running=3 - k, succeeded=k)
        for k, j in enumerate(claimed, start=1)
    ]
    last = (await kit.events())[-1]
    assert _type(last) == "partition_complete" and last.seq == since + 4
    assert last.data["counts"] == _counts(succeeded=3)


@pytest.mark.parametrize("broken", [False, True], ids=["counted", "recounted"])
async def test_a_lost_lease_in_a_batch_is_refused_and_untouched(kit: Kit, broken: bool) -> None:
    await kit.put(3)
    lost, kept, _ = sorted(await kit.take(3), key=lambda j: j.id)
    if broken:
        await _break_counters(kit)
    since = await _last_seq(kit)
    async with kit.db.transaction() as conn:
        outcome = await complete_many(
            conn,
            [Completion(Lease(lost.id, "stale"), 1), Completion(kept.lease, 2)],
        )
    assert outcome == {lost.id: False, kept.id: True}
    assert (await kit.load(lost.id)).status is JobStatus.RUNNING
    assert (await kit.load(kept.id)).result == 2
    (event,) = await _completed(kit, since)
    assert event.seq == since + 1
    assert event.data == _expected(kept, 1, 3, {}, running=2, succeeded=1)
    assert _type((await kit.events())[-1]) == "task_complete"  # two still run: not finished


async def test_one_job_with_broken_counters_is_recounted(kit: Kit) -> None:
    await kit.put()
    (job,) = await kit.take()
    await _break_counters(kit)
    since = await _last_seq(kit)
    async with kit.db.transaction() as conn:
        assert await complete(conn, job.lease, event_data={"x": 1}) is True
    (event,) = await _completed(kit, since)
    assert event.data == _expected(job, 1, 1, {"x": 1}, succeeded=1)
    assert _type((await kit.events())[-1]) == "partition_complete"


@pytest.mark.parametrize("broken", [False, True], ids=["counted", "recounted"])
async def test_a_hooked_batch_writes_its_notifications_in_order(kit: Kit, broken: bool) -> None:
    await _hook(kit)
    await kit.put(3)
    claimed = sorted(await kit.take(3), key=lambda j: j.id)
    if broken:
        await _break_counters(kit)
    since = await _last_seq(kit)
    batch = [Completion(j.lease, event_data={"i": i}) for i, j in enumerate(claimed)]
    async with kit.db.transaction() as conn:
        assert await complete_many(conn, batch[::-1]) == {j.id: True for j in claimed}
        sent = await list_outbox(conn, kit.org_id)
    events = await _completed(kit, since)
    assert [(r.topic, r.payload) for r in reversed(sent)] == [  # oldest first
        (
            "task_complete",
            {"partition": "run-1", "seq": e.seq, "type": "task_complete", "data": e.data},
        )
        for e in events
    ]
    assert [e.data["i"] for e in events] == [0, 1, 2]


async def test_jobs_the_statement_must_not_complete_come_back_none(kit: Kit) -> None:
    async with kit.db.transaction() as conn:
        await set_cap(conn, SlotScope.PROVIDER, 5, provider="capped")
        await configure_bucket(conn, "metered", tpm=600)
        specs = [
            JobSpec(kind="echo", org_id=kit.org_id, partition="run-1", provider=p, item_key=p)
            for p in ("capped", "metered", "free")
        ]
        await enqueue_many(conn, specs)
    claimed = {j.item_key: j for j in await kit.take(3)}
    capped, metered, free = claimed["capped"], claimed["metered"], claimed["free"]
    async with kit.db.transaction() as conn:
        outcome = await complete_many(
            conn,
            [
                Completion(capped.lease, 1),
                Completion(metered.lease, 2, usage_tokens=50),
                Completion(free.lease, 3),
            ],
        )
    assert outcome == {capped.id: None, metered.id: None, free.id: True}
    assert outcome[capped.id] is None and outcome[metered.id] is None
    for job in (capped, metered):
        assert (await kit.load(job.id)).status is JobStatus.RUNNING
    async with kit.db.transaction() as conn:
        assert await complete(conn, capped.lease, 1) is True  # the general path
        rows = (await conn.execute(select(jobs.c.id, jobs.c.status))).all()
    assert sorted(s for _, s in rows) == ["running", "succeeded", "succeeded"]
    assert await kit.slots_in_use() == {"provider:capped": 0}
