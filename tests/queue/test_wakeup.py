"""Idle workers wake on PostgreSQL NOTIFY (queue/wakeup.py): enqueue sends one notice per
transaction naming the kinds runnable now, and a worker whose poll is 30 s starts a new job
within seconds, also after its LISTEN connection was killed (it reconnects and claims once to
catch up on what was enqueued meanwhile). On SQLite workers poll."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import psycopg
import pytest
from tests.waiting import wait_until_async, worker_idle

from valuerank.db import Database
from valuerank.db import listen as db_listen
from valuerank.db.listen import libpq_dsn
from valuerank.queue import (
    Job,
    JobSpec,
    JobStatus,
    Worker,
    enqueue_many,
    pause_partition,
    resume_partition,
)
from valuerank.queue.wakeup import JOBS_CHANNEL, jobs_payload, payload_kinds

if TYPE_CHECKING:
    from tests.queue.conftest import Kit

postgresql_only = pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)

POLL = 30.0  # far longer than any wait below: only a NOTIFY (or the catch-up) makes them fast
FAST_ENOUGH = 5.0  # holds at load 10; without LISTEN a job would wait for the 30 s poll


def test_the_payload_names_the_kinds_or_any() -> None:
    assert payload_kinds(jobs_payload(["b", "a", "a"])) == frozenset({"a", "b"})
    assert payload_kinds(jobs_payload(None)) is None
    assert jobs_payload(None) == ""
    assert payload_kinds("not json") is None  # an operator's NOTIFY wakes everyone
    assert jobs_payload([f"kind-{i:04}" for i in range(1000)]) == ""  # too long: any kind


class Started:
    """A handler that notes when each job started; `kind` is unique to the test, so notices
    of tests running at the same time (the channel is the database's) are told apart."""

    def __init__(self) -> None:
        self.kind = f"wake-{uuid.uuid4().hex[:8]}"
        self.at: dict[str, float] = {}
        self.runs: Counter[str] = Counter()

    async def __call__(self, job: Job) -> Any:
        self.at.setdefault(job.id, time.monotonic())
        self.runs[job.id] += 1


async def _enqueue(kit: Kit, kind: str, **fields: Any) -> tuple[str, float]:
    """One job; its id and when its transaction committed."""
    spec = JobSpec(kind=kind, org_id=kit.org_id, partition="run-1", **fields)
    async with kit.db.transaction(immediate=True) as conn:
        (enqueued,) = await enqueue_many(conn, [spec])
    return enqueued.job_id, time.monotonic()


async def _start_delay(kit: Kit, started: Started, kind: str | None = None) -> float:
    """Enqueue a job and wait until its handler starts; the seconds from commit to start."""
    job_id, committed = await _enqueue(kit, kind or started.kind)
    await wait_until_async(lambda: job_id in started.at, what=f"job {job_id} to start")
    return started.at[job_id] - committed


@asynccontextmanager
async def _idle_worker(kit: Kit, started: Started) -> AsyncIterator[Worker]:
    """A worker polling every 30 s, listening, and idle (its catch-up claim done)."""
    settings = kit.settings.model_copy(update={"poll_seconds": POLL})
    worker = Worker(
        kit.db,
        settings=settings,
        worker_id=f"test-{uuid.uuid4().hex[:12]}",
        handlers={started.kind: started},
    )
    assert worker.wakeup is not None
    task = asyncio.create_task(worker.run_forever())
    try:
        await worker_idle(worker)  # the claim its connection woke has been made
        yield worker
    finally:
        worker.stop()
        await task


async def _listen_pid(db: Database, worker: Worker) -> int | None:
    """The worker's LISTEN backend, found as an operator would: by application_name."""
    async with await psycopg.AsyncConnection.connect(libpq_dsn(db), autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s",
            (f"valuerank worker {worker.worker_id}",),
        )
        row = await cur.fetchone()
        return None if row is None else int(row[0])


@postgresql_only
async def test_enqueue_notifies_once_per_transaction_naming_the_runnable_kinds(kit: Kit) -> None:
    tag = uuid.uuid4().hex[:8]
    now, later, dup = f"now-{tag}", f"later-{tag}", f"dup-{tag}"

    def spec(kind: str, key: str, **fields: Any) -> JobSpec:
        return JobSpec(kind=kind, org_id=kit.org_id, partition="run-1", item_key=key, **fields)

    async with await psycopg.AsyncConnection.connect(libpq_dsn(kit.db), autocommit=True) as conn:
        await conn.execute(f"LISTEN {JOBS_CHANNEL}")
        async with kit.db.transaction(immediate=True) as tx:
            await enqueue_many(tx, [spec(now, f"a{i}") for i in range(3)] + [spec(dup, "d")])
            # The same payload again in this transaction: PostgreSQL folds the two.
            await enqueue_many(tx, [spec(dup, "d2"), spec(now, "a3")])
            await enqueue_many(tx, [spec(later, "l", delay_seconds=600)])
        async with kit.db.transaction(immediate=True) as tx:
            in_an_hour = datetime.now(UTC) + timedelta(hours=1)
            await enqueue_many(tx, [spec(later, "l2", run_at=in_an_hour)])  # held back
            await enqueue_many(tx, [spec(dup, "d")])  # exists already: nothing new
        async with kit.db.transaction(immediate=True) as tx:
            await enqueue_many(tx, [spec(now, "a4")])  # marks the end of what we sent

        heard: list[frozenset[str] | None] = []
        async for notice in conn.notifies(timeout=FAST_ENOUGH):
            kinds = payload_kinds(notice.payload)
            if kinds is not None and kinds & {now, later, dup}:  # ignore other tests'
                heard.append(kinds)
                if len(heard) == 2:
                    break
    assert heard == [frozenset({now, dup}), frozenset({now})]


@postgresql_only
async def test_an_idle_worker_starts_new_jobs_long_before_its_poll(kit: Kit) -> None:
    started = Started()
    async with _idle_worker(kit, started) as worker:
        for _ in range(3):  # each after the worker went idle again
            assert await _start_delay(kit, started) < FAST_ENOUGH
            await worker_idle(worker)
        assert worker.wakeup is not None and worker.wakeup.woken >= 3
    assert set(started.runs.values()) == {1}


@postgresql_only
async def test_resuming_a_paused_run_wakes_the_idle_worker(kit: Kit) -> None:
    started = Started()
    async with kit.db.transaction(immediate=True) as conn:
        await pause_partition(conn, kit.org_id, "run-1")
    async with _idle_worker(kit, started) as worker:
        assert worker.wakeup is not None
        woken = worker.wakeup.woken
        job_id, _ = await _enqueue(kit, started.kind)  # wakes it, but the run is paused
        await worker_idle(worker, woken_above=woken)  # woken, claimed nothing, idle again
        assert job_id not in started.at
        async with kit.db.transaction(immediate=True) as conn:
            await resume_partition(conn, kit.org_id, "run-1")
        resumed = time.monotonic()
        await wait_until_async(lambda: job_id in started.at, what="the resumed run's job")
        assert started.at[job_id] - resumed < FAST_ENOUGH


@postgresql_only
async def test_after_its_listen_connection_is_killed_the_worker_catches_up_at_once(
    kit: Kit, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=db_listen.__name__)
    started = Started()
    async with _idle_worker(kit, started) as worker:
        assert worker.wakeup is not None
        listener = worker.wakeup.listener
        # Reconnect 1.5 s after the loss (0.2 s by default): long enough to enqueue meanwhile.
        listener.reconnect_seconds = (1.5, 10.0)
        old_pid = await _listen_pid(kit.db, worker)
        assert old_pid is not None and old_pid == listener.backend_pid
        async with await psycopg.AsyncConnection.connect(libpq_dsn(kit.db), autocommit=True) as c:
            await c.execute("SELECT pg_terminate_backend(%s)", (old_pid,))
        await wait_until_async(lambda: not listener.connected.is_set(), what="the loss noticed")

        # Enqueued while nobody listens: its NOTIFY is lost; the reconnect's claim finds it.
        lost_id, committed = await _enqueue(kit, started.kind)
        assert not listener.connected.is_set(), "reconnected before the enqueue: no proof"
        await wait_until_async(lambda: lost_id in started.at, what="the job enqueued meanwhile")
        assert started.at[lost_id] - committed < FAST_ENOUGH
        assert listener.connected.is_set()
        new_pid = await _listen_pid(kit.db, worker)
        assert new_pid not in (None, old_pid)

        await worker_idle(worker)
        assert await _start_delay(kit, started) < FAST_ENOUGH  # NOTIFY heard again
    assert set(started.runs.values()) == {1}  # no job ran twice
    for job_id in started.at:
        job = await kit.load(job_id)
        assert job.status is JobStatus.SUCCEEDED and job.attempts == 1
    lines = [r for r in caplog.records if r.name == db_listen.__name__]
    assert [r.levelno for r in lines] == [logging.WARNING, logging.INFO]  # once per streak


async def test_only_postgresql_workers_listen(kit: Kit) -> None:
    worker = Worker(kit.db, settings=kit.settings, handlers={"echo": Started()})
    assert (worker.wakeup is None) == (kit.db.url.dialect == "sqlite")
