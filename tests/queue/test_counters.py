"""Per-partition job counters, the one-statement paths (PostgreSQL) and batched completions.

The counters on a partition's `queue_controls` row must always equal a real count of its jobs
(they are what job events report as progress); the fast paths must write exactly what the
general paths write; and a cap, a bucket or a pause must switch the fast claim off at once.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy import insert, select, update
from tests.waiting import WAIT_SECONDS

from valuerank.db.tables import events, jobs, queue_controls
from valuerank.queue import (
    EventType,
    Job,
    JobSpec,
    JobStatus,
    Permanent,
    RateLimited,
    SlotScope,
    Transient,
    Worker,
    cancel_job,
    cancel_partition,
    complete,
    enqueue_many,
    fail,
    pause_partition,
    pause_provider,
    pause_queue,
    reap,
    requeue_failed,
    resume_partition,
    resume_provider,
    resume_queue,
    retry_later,
    set_cap,
    settle_error,
)
from valuerank.queue.claim_sql import PG_CLAIM_FAST, pg_sql
from valuerank.queue.dialect import db_now_plus, pg_rows
from valuerank.queue.events import count_partition, partition_progress
from valuerank.queue.lease import Completion, complete_many
from valuerank.queue.maintenance import run_maintenance
from valuerank.queue.outbox import register_webhook
from valuerank.queue.prune import prune_jobs
from valuerank.queue.ratelimit import configure_bucket
from valuerank.queue.slots import remove_cap

if TYPE_CHECKING:
    from tests.queue.conftest import Kit


async def _counters_match(kit: Kit, partition: str = "run-1") -> dict[str, int]:
    async with kit.db.transaction() as conn:
        kept = await partition_progress(conn, partition)
        counted = await count_partition(conn, partition)
    assert kept.counts == counted.counts
    return counted.counts


async def test_counters_follow_every_move(kit: Kit) -> None:
    ids = await kit.put(10)
    assert (await _counters_match(kit))["queued"] == 10
    a, b, c, d, e, f, g, *_ = await kit.take(7)
    assert (await _counters_match(kit))["running"] == 7
    async with kit.db.transaction(immediate=True) as conn:
        assert await complete(conn, a.lease, {"ok": 1})
        assert await fail(conn, b.lease, "boom")
        assert await retry_later(conn, c.lease, delay_seconds=0)
        await settle_error(conn, d, Transient("flaky"), settings=kit.settings)
        await settle_error(conn, e, Permanent("no"), settings=kit.settings)
    async with kit.db.transaction(immediate=True) as conn:
        assert await cancel_job(conn, kit.org_id, ids[9]) is JobStatus.CANCELLED
        assert await cancel_job(conn, kit.org_id, f.id) is JobStatus.RUNNING  # asked to stop
    await kit.age("lease_expires_at", 1, [g.id])
    async with kit.db.transaction(immediate=True) as conn:
        await reap(conn, kit.settings)
        assert len(await requeue_failed(conn, kit.org_id, partition="run-1")) == 2
    counts = await _counters_match(kit)
    assert counts["succeeded"] == 1 and counts["cancelled"] == 1 and counts["failed"] == 0
    async with kit.db.transaction(immediate=True) as conn:
        await cancel_partition(conn, kit.org_id, "run-1")
    counts = await _counters_match(kit)
    assert counts["queued"] == 0
    # Pruning finished jobs takes them out of the counts, as out of a count.
    await kit.age("finished_at", 30 * 86400)
    async with kit.db.transaction(immediate=True) as conn:
        assert await prune_jobs(conn, older_than_seconds=86400, batch=100) > 0
    await _counters_match(kit)


async def test_a_batch_numbers_its_events_and_shows_progress_job_by_job(kit: Kit) -> None:
    await kit.put(4)
    await kit.put(2, partition="run-2")
    taken = await kit.take(6)
    by_partition = sorted(taken, key=lambda j: (j.partition, j.id))
    lost = by_partition[1]
    async with kit.db.transaction(immediate=True) as conn:  # someone else took it over
        await conn.execute(update(jobs).where(jobs.c.id == lost.id).values(lease_token="other"))
    batch = [Completion(j.lease, {"n": j.payload["i"]}, {"extra": j.id}) for j in taken]
    async with kit.db.transaction(immediate=True) as conn:
        done = await complete_many(conn, batch)
    assert done == {j.id: j.id != lost.id for j in taken}
    story = [e for e in await kit.events() if e.type is EventType.TASK_COMPLETE]
    assert [e.seq for e in story] == sorted(e.seq for e in story)
    finished = sorted(j.id for j in taken if j.partition == "run-1" and j.id != lost.id)
    assert [e.data["job_id"] for e in story] == finished
    assert [e.data["progress"] for e in story] == ["1/4", "2/4", "3/4"]
    assert all(e.data["extra"] == e.data["job_id"] for e in story)
    other = [e for e in await kit.events("run-2") if e.type is not EventType.TASK_STARTED]
    assert [e.type for e in other] == [
        EventType.TASK_COMPLETE,
        EventType.TASK_COMPLETE,
        EventType.PARTITION_COMPLETE,
    ]
    assert other[-1].data["counts"]["succeeded"] == 2
    await _counters_match(kit)
    await _counters_match(kit, "run-2")


async def test_fast_and_general_claims_agree_on_the_order(kit: Kit) -> None:
    """The PostgreSQL claim reads each partition's best jobs by index; with a cap (general
    path) or without (one statement) it must pick what the full sort picks."""
    from valuerank.orgs import ensure_org

    async with kit.db.transaction() as conn:
        org_b = await ensure_org(conn, "org-b")
    await kit.put(5, partition="a1", prefix="a1")
    await kit.put(3, partition="a2", prefix="a2", priority="high")
    await kit.put(4, partition="b1", prefix="b1", org_id=org_b)
    await kit.put(2, partition="b1", prefix="b1-low", org_id=org_b, priority="low")

    async def order() -> list[str]:
        got: list[str] = []
        while batch := await kit.take(1):
            got.append(batch[0].item_key)
        return got

    fast = await order()
    async with kit.db.transaction(immediate=True) as conn:
        await conn.execute(
            update(jobs).values(status="queued", lease_token=None, attempts=0, started_at=None)
        )
        await conn.execute(
            update(queue_controls)
            .where(queue_controls.c.scope == "partition")
            .values(
                jobs_queued=queue_controls.c.jobs_queued + queue_controls.c.jobs_running,
                jobs_running=0,
            )
        )
        await set_cap(conn, SlotScope.GLOBAL, 1000)  # the general path from now on
    general = await order()
    assert fast == general
    assert fast[:3] == ["a2-0", "a2-1", "a2-2"]  # priority first
    assert fast[-2:] == ["b1-low-0", "b1-low-1"]  # and last
    # In between, fairness: the organisation with fewer running jobs first, then within a
    # tie the partition with fewer; age last.
    assert fast[3:-2] == [
        "b1-0",
        "b1-1",
        "b1-2",
        "a1-0",
        "b1-3",
        "a1-1",
        "a1-2",
        "a1-3",
        "a1-4",
    ]
    for partition in ("a1", "a2", "b1"):
        await _counters_match(kit, partition)


async def test_fast_and_general_paths_write_the_same_events(kit: Kit) -> None:
    """The same story told twice: claimed and completed (one by one, then as a batch) with no
    limit (PostgreSQL: the one-statement paths) and under a cap (the general paths). Job ids
    aside, the events must be the same, field by field, progress included."""

    async def story(partition: str, capped: bool) -> list[tuple[str, dict[str, Any]]]:
        await kit.put(4, partition=partition, prefix="x", provider="p", model="m")
        taken = sorted(await kit.take(4), key=lambda j: j.item_key)
        assert all(bool(j.slot_keys) is capped for j in taken)  # which path claimed them
        async with kit.db.transaction(immediate=True) as conn:
            assert await complete(conn, taken[0].lease, {"r": 0}, event_data={"note": "a"})
        async with kit.db.transaction(immediate=True) as conn:
            batch = [Completion(j.lease, {"r": 1}, {"note": "b"}) for j in taken[1:]]
            done = await complete_many(conn, batch)
        for c in batch:  # what a batch leaves to the general path, the caller completes
            if done[c.lease.job_id] is None:
                async with kit.db.transaction(immediate=True) as conn:
                    assert await complete(conn, c.lease, {"r": 1}, event_data={"note": "b"})
        names = {j.id: j.item_key for j in taken}
        told = []
        for e in await kit.events(partition):
            data = dict(e.data)
            if "job_id" in data:
                data["job_id"] = names[data["job_id"]]
            told.append((str(e.type), data))  # a StrEnum, or a plain string
        return told

    fast = await story("fast", capped=False)
    async with kit.db.transaction(immediate=True) as conn:
        await set_cap(conn, SlotScope.GLOBAL, 1000)  # the general paths from now on
    general = await story("general", capped=True)
    assert fast == general
    assert [t for t, _ in fast] == ["task_started"] * 4 + ["task_complete"] * 4 + [
        "partition_complete"
    ]
    assert [d["progress"] for t, d in fast if t == "task_complete"] == ["1/4", "2/4", "3/4", "4/4"]
    await _counters_match(kit, "fast")
    await _counters_match(kit, "general")


async def test_pause_cap_and_bucket_switch_the_fast_claim_off_at_once(kit: Kit) -> None:
    await kit.put(6, provider="p1")
    async with kit.db.transaction(immediate=True) as conn:
        await pause_queue(conn)
    assert await kit.take(3) == []
    async with kit.db.transaction(immediate=True) as conn:
        await resume_queue(conn)
        await pause_provider(conn, "p1")
    assert await kit.take(3) == []
    async with kit.db.transaction(immediate=True) as conn:
        await resume_provider(conn, "p1")
        await pause_partition(conn, kit.org_id, "run-1")
    assert await kit.take(3) == []
    async with kit.db.transaction(immediate=True) as conn:
        await resume_partition(conn, kit.org_id, "run-1")
        await set_cap(conn, SlotScope.PROVIDER, 1, provider="p1")
    first = await kit.take(3)
    assert len(first) == 1 and first[0].slot_keys == ["provider:p1"]  # the cap holds
    async with kit.db.transaction(immediate=True) as conn:
        assert await complete(conn, first[0].lease)  # the general path gives the slot back
    assert await kit.slots_in_use() == {"provider:p1": 0}
    async with kit.db.transaction(immediate=True) as conn:
        await remove_cap(conn, "provider:p1")
        await configure_bucket(conn, "p1", rpm=2)
    assert len(await kit.take(5)) == 2  # the bucket holds
    await _counters_match(kit)


async def _fast_claim_stands_back(kit: Kit) -> bool:
    """PostgreSQL: whether the one-statement claim's guard finds a cap or a limiting bucket
    (asked with no kind to claim, so nothing is claimed)."""
    async with kit.db.transaction() as conn:
        params = {"worker_id": "probe", "lease_seconds": 30.0}
        (row, *_) = await pg_rows(conn, pg_sql(PG_CLAIM_FAST, 1, ()), params)
    return bool(row["guard_limited"])


async def test_a_bucket_learned_from_a_429_keeps_the_fast_claim(kit: Kit) -> None:
    """A 429 from a provider nobody configured limits for makes it a bucket with no limits.
    It holds that provider's jobs back until the reset, whichever path claims; on PostgreSQL
    the one-statement claim stays on (it leaves out the blocked bucket's jobs itself) until a
    bucket limits something."""
    pg = kit.db.url.dialect == "postgresql"
    await kit.put(3, provider="p1")
    await kit.put(2, prefix="q", provider="p2")
    (job,) = await kit.take(1)
    assert job.provider == "p1"
    async with kit.db.transaction(immediate=True) as conn:
        await settle_error(conn, job, RateLimited(retry_after=60), settings=kit.settings)
    if pg:
        assert not await _fast_claim_stands_back(kit)
    assert sorted(j.provider or "" for j in await kit.take(5)) == ["p2", "p2"]
    async with kit.db.transaction(immediate=True) as conn:
        await configure_bucket(conn, "p1", rpm=100)
    if pg:
        assert await _fast_claim_stands_back(kit)
    assert await kit.take(5) == []  # still blocked, now on the general path
    await _counters_match(kit)


async def test_webhook_notifications_of_the_fast_paths(kit: Kit) -> None:
    async with kit.db.transaction() as conn:
        await register_webhook(conn, kit.org_id, "http://example.invalid/hook")
    await kit.put(2)
    a, b = await kit.take(2)
    async with kit.db.transaction(immediate=True) as conn:
        assert await complete(conn, a.lease, "x")
    async with kit.db.transaction(immediate=True) as conn:
        assert await complete(conn, b.lease, "y")
    from valuerank.db.tables import outbox

    async with kit.db.transaction() as conn:
        topics = [
            (r.payload["seq"], r.topic)
            for r in await conn.execute(select(outbox.c.payload, outbox.c.topic))
        ]
    assert sorted(topics) == [
        (1, "task_started"),
        (2, "task_started"),
        (3, "task_complete"),
        (4, "task_complete"),
        (5, "partition_complete"),
    ]


async def _partition_completes(kit: Kit, partition: str = "run-1") -> int:
    return sum(e.type is EventType.PARTITION_COMPLETE for e in await kit.events(partition))


async def test_jobs_changed_behind_the_queues_back_are_recounted(kit: Kit) -> None:
    # Counters saying "finished" too early: the completion counts for real and waits.
    a_id, _ = await kit.put(2)
    a, b = await kit.take(2)
    async with kit.db.transaction(immediate=True) as conn:
        assert await complete(conn, a.lease)
        await conn.execute(  # plain SQL: a back to queued, the counters do not know
            update(jobs).where(jobs.c.id == a_id).values(status="queued", lease_token=None)
        )
    async with kit.db.transaction(immediate=True) as conn:
        assert await complete(conn, b.lease)
    assert await _partition_completes(kit) == 0  # a is still queued
    await _counters_match(kit)
    (again,) = await kit.take(1)
    async with kit.db.transaction(immediate=True) as conn:
        assert await complete(conn, again.lease)
    assert await _partition_completes(kit) == 1
    await _counters_match(kit)

    # Counters saying "running" when nothing runs: maintenance recounts and completes.
    (c_id,) = await kit.put(1, partition="run-2")
    await kit.take(1)
    async with kit.db.transaction(immediate=True) as conn:
        await conn.execute(update(jobs).where(jobs.c.id == c_id).values(status="succeeded"))
    record = await run_maintenance(kit.db, kit.settings)
    assert record is not None and record.actions["recounted_partitions"] == 1
    assert await _partition_completes(kit, "run-2") == 1
    await _counters_match(kit, "run-2")

    # Jobs inserted with plain SQL (no counters, no partition row): counted at first sight.
    async with kit.db.transaction(immediate=True) as conn:
        await conn.execute(
            insert(jobs).values(
                id="raw-1",
                org_id=kit.org_id,
                partition="raw",
                item_key="raw-1",
                kind="echo",
                payload={},
                status="queued",
                run_at=db_now_plus(conn.dialect.name, -1),
            )
        )
    (raw,) = await kit.take(1)
    assert (await _counters_match(kit, "raw"))["running"] == 1
    async with kit.db.transaction(immediate=True) as conn:
        assert await complete(conn, raw.lease)
    assert await _partition_completes(kit, "raw") == 1
    await _counters_match(kit, "raw")


async def test_the_worker_completes_together_what_finished_together(kit: Kit) -> None:
    """Jobs without slots are completed in batches; jobs holding a slot (capped organisation)
    go through the general path: every event, counter and slot is right either way."""
    from valuerank.orgs import ensure_org

    async with kit.db.transaction() as conn:
        org_b = await ensure_org(conn, "org-b")
    capped = await kit.put(20)
    free = await kit.put(20, partition="run-b", org_id=org_b)
    async with kit.db.transaction(immediate=True) as conn:
        await set_cap(conn, SlotScope.ORG, 100, org_id=kit.org_id)
    seen: list[str] = []

    async def handler(job: Job) -> Any:
        seen.append(job.id)
        await asyncio.sleep(0)
        return job.payload["i"]

    worker = Worker(kit.db, settings=kit.settings, concurrency=8, handlers={"echo": handler})
    stats = await worker.run_until_idle()
    assert stats.succeeded == 40 and sorted(seen) == sorted(capped + free)
    assert await kit.status_counts() == {"succeeded": 40}
    assert await kit.slots_in_use() == {f"org:{kit.org_id}": 0}
    for partition in ("run-1", "run-b"):
        story = await kit.events(partition)
        assert [e.seq for e in story] == list(range(1, 42))
        completes = [e for e in story if e.type is EventType.TASK_COMPLETE]
        assert [e.data["progress"] for e in completes] == [f"{n}/20" for n in range(1, 21)]
        assert story[-1].type is EventType.PARTITION_COMPLETE
        await _counters_match(kit, partition)


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)  # row locks
@pytest.mark.parametrize("held", [10, 40])
async def test_a_claim_skips_held_jobs_and_widens_its_window(kit: Kit, held: int) -> None:
    """Jobs another transaction holds are skipped, in claim order, even when they fill the
    first window (16 candidates beyond n): the next round reads 8 times more."""
    ids = await kit.put(60)
    async with kit.db.engine.connect() as other, other.begin():
        await other.execute(select(jobs.c.id).where(jobs.c.id.in_(ids[:held])).with_for_update())
        got = await kit.take(2)
        assert [j.id for j in got] == ids[held : held + 2]
    assert (await _counters_match(kit))["running"] == 2


async def test_racing_claimers_with_a_narrow_window_share_nothing_and_lose_nothing(
    kit: Kit,
) -> None:
    """A window of one candidate beyond what a claim asks for: racing claimers skip each
    other's held jobs and widen their windows, and no job is claimed twice or left behind."""
    narrow = kit.settings.model_copy(update={"claim_window_slack": 1})
    ids = set(await kit.put(60))
    seen: list[str] = []

    async def claimer(n: int) -> None:
        while batch := await kit.take(2, worker=f"w{n}", settings=narrow):
            seen.extend(j.id for j in batch)
            await asyncio.sleep(0)

    await asyncio.gather(*(claimer(n) for n in range(6)))
    assert len(seen) == len(set(seen)) and set(seen) == ids
    await _counters_match(kit)


async def test_enqueue_counts_only_what_it_inserted(kit: Kit) -> None:
    await kit.put(3)
    await kit.put(5)  # items 0-2 exist already
    async with kit.db.transaction(immediate=True) as conn:
        specs = [JobSpec(kind="echo", org_id=kit.org_id, partition="run-1", item_key="item-1")]
        assert not (await enqueue_many(conn, specs))[0].enqueued
    assert (await _counters_match(kit))["queued"] == 5
    async with kit.db.transaction() as conn:
        assert await conn.scalar(select(events.c.seq).limit(1)) is None  # enqueue writes none


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)  # server backends
async def test_a_worker_rides_out_its_kept_connections_being_killed(
    kit: Kit, caplog: pytest.LogCaptureFixture
) -> None:
    """The worker keeps a connection for claims and one for completions: when the server
    drops them, the errors are connection errors as usual, the worker reconnects, and every
    job still runs and completes once."""
    from sqlalchemy import text

    from valuerank.db import create_database

    app = f"vr-kill-test-{uuid.uuid4().hex[:12]}"  # only this test's own connections die
    url = kit.db.url.url.set(drivername="postgresql").render_as_string(hide_password=False)
    wdb = create_database(url, connect_args={"application_name": app})
    ids = await kit.put(30)
    ran: list[str] = []
    killed = 0

    async def handler(job: Job) -> Any:
        nonlocal killed
        ran.append(job.id)
        if len(ran) in (5, 15):
            async with kit.db.engine.connect() as admin:
                found = await admin.scalar(
                    text(
                        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                        "WHERE application_name = :app"
                    ),
                    {"app": app},
                )
                killed += int(found or 0)
        return None

    caplog.set_level(logging.WARNING, logger="valuerank.queue.worker")
    worker = Worker(wdb, settings=kit.settings, concurrency=2, handlers={"echo": handler})
    try:
        async with asyncio.timeout(WAIT_SECONDS):  # a bound for a hang, not a speed
            while set(ran) != set(ids):
                await worker.run_until_idle()
                await asyncio.sleep(kit.settings.poll_seconds)
            assert killed >= 2
            # The worker logs a connection error as a warning ("database unavailable") and any
            # other failure of a claim or an outcome with its traceback, as an error.
            logged = [r for r in caplog.records if r.name == "valuerank.queue.worker"]
            assert any("database unavailable" in r.getMessage() for r in logged)
            assert [r.getMessage() for r in logged if r.levelno >= logging.ERROR] == []
            # Outcomes lost with a killed connection come back when their leases expire.
            await kit.age("lease_expires_at", 1)
            async with kit.db.transaction(immediate=True) as conn:
                await reap(conn, kit.settings)
            while await kit.status_counts() != {"succeeded": 30}:
                await worker.run_until_idle()
    finally:
        await wdb.dispose()
    await _counters_match(kit)


async def test_the_migration_counts_the_jobs_already_there(empty_db: Any) -> None:
    """0005 gives existing partitions their counters (and a row to partitions that had
    none), and comes back down cleanly."""
    from alembic import command
    from sqlalchemy import text

    from valuerank.db.migrate import alembic_config, upgrade
    from valuerank.orgs import ensure_org

    await upgrade(empty_db, "0004_pipeline")
    async with empty_db.transaction() as conn:
        org = await ensure_org(conn, "old")
        for i, status in enumerate(["queued", "queued", "running", "succeeded", "failed"]):
            await conn.execute(
                text(
                    "INSERT INTO jobs (id, org_id, partition, item_key, kind, payload, status,"
                    " priority, run_at, attempts, max_attempts, cancel_requested, created_at)"
                    " VALUES (:id, :org, :p, :id, 'echo', '{}', :status, 0, CURRENT_TIMESTAMP,"
                    " 0, 3, false, CURRENT_TIMESTAMP)"
                ),
                {
                    "id": f"old-{i}",
                    "org": org,
                    "p": "old-run" if i < 4 else "orphan",
                    "status": status,
                },
            )
        await conn.execute(
            text(
                "INSERT INTO queue_controls (scope, key, org_id, paused, cancel_requested,"
                " last_seq) VALUES ('partition', 'old-run', :org, false, false, 7)"
            ),
            {"org": org},
        )
    await upgrade(empty_db)
    async with empty_db.transaction() as conn:
        old = await partition_progress(conn, "old-run")
        orphan = await partition_progress(conn, "orphan")
        seq = await conn.scalar(
            select(queue_controls.c.last_seq).where(queue_controls.c.key == "old-run")
        )
    assert old.counts == {"queued": 2, "running": 1, "succeeded": 1, "failed": 0, "cancelled": 0}
    assert orphan.counts["failed"] == 1 and orphan.total == 1
    assert seq == 7  # kept

    def down(sync_conn: Any) -> None:
        command.downgrade(alembic_config(sync_conn), "0004_pipeline")

    async with empty_db.engine.begin() as conn:
        await conn.run_sync(down)
    await upgrade(empty_db)
