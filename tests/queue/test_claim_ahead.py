"""Claiming ahead (queue/worker.py): with short jobs a worker of concurrency K claims more than
K jobs per claim statement and completes them in batches, still runs at most K at once, hands
back what it would not start in time, takes nothing ahead under a cap, and never completes a
job twice; the jobs a killed worker claimed ahead are reaped and run once, by another."""

from __future__ import annotations

import asyncio
import os
import signal
from collections import Counter
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select
from tests.servers import start_worker_process
from tests.waiting import WAIT_SECONDS, wait_until_async

from valuerank.db.tables import jobs
from valuerank.queue import Job, JobSpec, JobStatus, Worker, enqueue_many
from valuerank.queue.events import EventType
from valuerank.queue.slots import SlotScope, set_cap

if TYPE_CHECKING:
    from tests.conftest import TestDatabase
    from tests.queue.conftest import Kit


async def _completions(kit: Kit, partition: str = "run-1") -> Counter[str]:
    """task_complete events per job id."""
    return Counter(
        e.data["job_id"] for e in await kit.events(partition) if e.type is EventType.TASK_COMPLETE
    )


async def _distinct(kit: Kit, column: str) -> int:
    """Distinct values of a job timestamp: one claim (or completion) statement writes one."""
    async with kit.db.transaction() as conn:
        return int(await conn.scalar(select(func.count(func.distinct(jobs.c[column])))) or 0)


async def test_short_jobs_are_claimed_and_completed_in_batches(kit: Kit) -> None:
    ids = await kit.put(120)
    seen: list[tuple[int, int, int]] = []  # (handlers running, jobs waiting, held)

    async def handler(job: Job) -> Any:
        seen.append((worker.in_flight, worker.waiting, worker.held))
        await asyncio.sleep(0)
        return job.payload["i"]

    # A heartbeat of 1 s: jobs up to 30 ms long still fill the claim-ahead (its budget is
    # half a heartbeat), however loaded the machine.
    settings = kit.settings.model_copy(update={"heartbeat_seconds": 1.0})
    worker = Worker(kit.db, settings=settings, concurrency=1, handlers={"echo": handler})
    stats = await worker.run_until_idle()
    assert stats.succeeded == 120 and stats.lost == 0
    assert max(h for h, _, _ in seen) == 1  # one handler at a time
    assert max(w for _, w, _ in seen) > 0  # jobs were waiting: claimed ahead
    assert max(held for _, _, held in seen) <= 2 * (1 + settings.claim_ahead)
    assert await kit.status_counts() == {"succeeded": 120}
    for n, job_id in enumerate(ids):
        job = await kit.load(job_id)
        assert job.result == n and job.attempts == 1
    assert await _completions(kit) == dict.fromkeys(ids, 1)  # none lost, none twice
    progress = [e.data["progress"] for e in await kit.events() if e.type is EventType.TASK_COMPLETE]
    assert progress == [f"{n}/120" for n in range(1, 121)]
    # A claim statement stamps its jobs' started_at with one time: far fewer claims than jobs.
    assert await _distinct(kit, "started_at") <= 120 // 3
    if kit.db.url.dialect == "postgresql":  # one statement per batch (SQLite: one per job)
        assert await _distinct(kit, "finished_at") < 120


async def test_nothing_is_claimed_ahead_under_a_cap(kit: Kit) -> None:
    """A job waiting in a worker would hold its slot: capped jobs are claimed K at a time."""
    await kit.put(30)
    async with kit.db.transaction(immediate=True) as conn:
        await set_cap(conn, SlotScope.ORG, 100, org_id=kit.org_id)
    seen: list[int] = []

    async def handler(job: Job) -> Any:
        seen.append(worker.waiting)
        await asyncio.sleep(0)

    settings = kit.settings.model_copy(update={"heartbeat_seconds": 1.0})
    worker = Worker(kit.db, settings=settings, concurrency=1, handlers={"echo": handler})
    stats = await worker.run_until_idle()
    assert stats.succeeded == 30 and max(seen) == 0
    assert await kit.slots_in_use() == {f"org:{kit.org_id}": 0}


async def test_jobs_waiting_past_their_first_heartbeat_are_handed_back(kit: Kit) -> None:
    """A long job blocks the one place: the jobs claimed ahead behind it go back to the queue
    (attempt refunded) when their first heartbeat is due, and run once after it."""
    (first,) = await kit.put(1, prefix="first", priority=2)
    (block,) = await kit.put(1, prefix="block", priority=1)
    rest = await kit.put(6, prefix="rest")
    order: list[str] = []

    async def handler(job: Job) -> Any:
        order.append(job.id)
        if job.id == block:  # until the worker has handed back what waits behind it
            await wait_until_async(lambda: worker.stats.released, what="a job handed back")

    settings = kit.settings.model_copy(update={"heartbeat_seconds": 0.2})
    worker = Worker(kit.db, settings=settings, concurrency=1, handlers={"echo": handler})
    stats = await worker.run_until_idle()
    assert stats.released >= 1 and stats.succeeded == 8
    assert order[:2] == [first, block] and sorted(order[2:]) == sorted(rest)
    assert await kit.status_counts() == {"succeeded": 8}
    for job_id in [first, block, *rest]:
        assert (await kit.load(job_id)).attempts == 1  # a hand-back spends no attempt
    assert await _completions(kit) == dict.fromkeys([first, block, *rest], 1)


async def test_a_stopping_worker_hands_back_its_waiting_jobs_at_once(kit: Kit) -> None:
    (first,) = await kit.put(1, prefix="first", priority=2)
    (block,) = await kit.put(1, prefix="block", priority=1)
    rest = await kit.put(5, prefix="rest")
    blocked = asyncio.Event()

    async def handler(job: Job) -> Any:
        if job.id == block:
            blocked.set()
            await asyncio.sleep(3600)  # cancelled when the shutdown grace is over

    settings = kit.settings.model_copy(update={"heartbeat_seconds": 5.0})
    worker = Worker(kit.db, settings=settings, concurrency=1, handlers={"echo": handler})
    run = asyncio.create_task(worker.run_forever())
    await asyncio.wait_for(blocked.wait(), WAIT_SECONDS)
    await wait_until_async(lambda: worker.waiting > 0, what="jobs claimed ahead")
    worker.stop()
    stats = await asyncio.wait_for(run, WAIT_SECONDS)
    assert stats.succeeded == 1 and stats.released == 1 + len(rest)
    assert (await kit.load(first)).status is JobStatus.SUCCEEDED
    for job_id in [block, *rest]:
        job = await kit.load(job_id)
        assert job.status is JobStatus.QUEUED and job.attempts == 0


async def test_sigkill_of_a_worker_holding_jobs_claimed_ahead_runs_each_once(
    kit: Kit, database_url: TestDatabase
) -> None:
    """A real worker process (concurrency 1) holds a long job and the short ones it claimed
    ahead behind it when it is killed; another worker reaps them all once their leases
    expire and runs each: one success per job, none lost, none twice."""
    specs = [
        JobSpec(
            kind="sleep",
            org_id=kit.org_id,
            partition="kill",
            item_key="first",
            payload={"seconds": 0},
            priority=2,
        ),
        JobSpec(
            kind="sleep",
            org_id=kit.org_id,
            partition="kill",
            item_key="long",
            payload={"seconds": 2},
            priority=1,
        ),
    ]
    specs += [
        JobSpec(
            kind="sleep",
            org_id=kit.org_id,
            partition="kill",
            item_key=f"short-{i}",
            payload={"seconds": 0},
        )
        for i in range(10)
    ]
    async with kit.db.transaction() as conn:
        ids = [e.job_id for e in await enqueue_many(conn, specs)]
    env = {
        **os.environ,
        "VALUERANK_DATABASE_URL": database_url.url,
        # The jobs claimed ahead are handed back when their first heartbeat is due (3 s): the
        # test kills the worker before that, while the long job (2 s) blocks its one place.
        "VALUERANK_WORKER_LEASE_SECONDS": "9",
        "VALUERANK_WORKER_HEARTBEAT_SECONDS": "3",
        "VALUERANK_WORKER_POLL_SECONDS": "0.05",
        "VALUERANK_WORKER_REAP_INTERVAL_SECONDS": "0.3",
    }

    async def held_by(worker_id: str) -> int:
        async with kit.db.transaction() as conn:
            return int(
                await conn.scalar(
                    select(func.count())
                    .select_from(jobs)
                    .where(jobs.c.status == "running", jobs.c.locked_by == worker_id)
                )
                or 0
            )

    procs = [start_worker_process(env, "--concurrency", "1", worker_id="w1")]
    try:

        async def claimed_ahead() -> bool:
            return await held_by("w1") >= 2  # concurrency 1: all but one are waiting

        await wait_until_async(claimed_ahead, what="w1 to claim ahead", tolerate=(Exception,))
        procs[0].proc.send_signal(signal.SIGKILL)
        code, _ = procs[0].finish()
        assert code == -signal.SIGKILL
        orphaned = {j.id for j in await _jobs(kit) if j.status is JobStatus.RUNNING}
        assert len(orphaned) >= 2

        procs.append(start_worker_process(env, "--concurrency", "1", worker_id="w2"))

        async def all_succeeded() -> bool:
            return all(j.status is JobStatus.SUCCEEDED for j in await _jobs(kit))

        await wait_until_async(all_succeeded, what="w2 to finish", tolerate=(Exception,))
        procs[1].signal(signal.SIGTERM)
        code, summary = procs[1].finish()
        assert code == 0
    finally:
        for wp in procs:
            wp.stop()
            wp.log_path.unlink(missing_ok=True)
    done = {j.id: j for j in await _jobs(kit)}
    assert set(done) == set(ids)
    assert await _completions(kit, "kill") == dict.fromkeys(ids, 1)
    by_w2 = 0
    for job_id in orphaned:
        job = done[job_id]
        if job.result["worker"] == "w1":  # w1's last commit landed as it died: once
            assert job.attempts == 1
        else:  # reaped (the attempt counts), then run by w2
            assert job.result["worker"] == "w2" and job.attempts >= 2
            by_w2 += 1
    assert by_w2 >= 1 and summary["reaped"] >= by_w2


async def _jobs(kit: Kit) -> list[Job]:
    from valuerank.queue.job import list_jobs

    async with kit.db.transaction() as conn:
        return await list_jobs(conn, org_id=kit.org_id)
