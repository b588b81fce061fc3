"""Real worker processes under real faults: SIGKILL, SIGSTOP past the lease, a PostgreSQL
restart, many claimers against one global cap, a poison job, a graceful SIGTERM.

Invariants: no job is lost, no job is completed twice (one `task_complete` per job), a
stalled worker's late result is discarded, caps hold across processes.
"""

from __future__ import annotations

import asyncio
import signal
import time

from sqlalchemy import func, select
from tests.waiting import wait_until_async

from valuerank.db.tables import jobs
from valuerank.queue import errors_of

from .conftest import Faults


async def _running_by(faults: Faults, worker_id: str) -> int:
    return sum(
        1 for j in await faults.jobs() if j.status.value == "running" and j.locked_by == worker_id
    )


async def test_sigkill_mid_jobs_loses_nothing_and_completes_each_once(faults: Faults) -> None:
    ids = await faults.put(12, payload={"seconds": 0.4}, partition="kill")
    first = faults.worker("w1", "--concurrency", "4")

    async def some_done_some_running() -> bool:
        jobs = await faults.jobs()
        done = sum(1 for j in jobs if j.status.value == "succeeded")
        return done >= 1 and await _running_by(faults, "w1") >= 1

    await faults.wait_for(some_done_some_running, "w1 to be mid-partition")
    first.signal(signal.SIGKILL)
    code, _ = first.finish()
    assert code == -signal.SIGKILL
    orphaned = {j.id for j in await faults.jobs() if j.status.value == "running"}
    assert orphaned, "the kill should leave jobs running under a dead worker"

    second = faults.worker("w2", "--concurrency", "4")
    await faults.wait_for(lambda: faults.all_succeeded(len(ids)), "w2 to finish the partition")
    second.signal(signal.SIGTERM)
    code, summary = second.finish()
    assert code == 0
    assert summary["reaped"] >= 1

    done = {j.id: j for j in await faults.jobs()}
    assert set(done) == set(ids)
    assert await faults.completions() == dict.fromkeys(ids, 1)
    by_w2 = 0
    for job_id in orphaned:
        job = done[job_id]
        if job.result["worker"] == "w1":
            # w1's COMMIT had reached the server when it died: the server finished it after
            # the read above. It landed once, and nobody reaped or ran the job again.
            assert job.attempts == 1
        else:  # reaped (an attempt counted), then finished by the new worker
            assert job.result["worker"] == "w2" and job.attempts >= 2
            by_w2 += 1
    assert by_w2 >= 1


# A's lease, and its first heartbeat just inside it: the test must stop A between its claim
# and that heartbeat (a process stopped inside a transaction would hold SQLite's write lock,
# and with it every other process — SQLite's workers belong in one process). The job lasts
# as long, so that A cannot finish it first either: the test has STALL_WINDOW seconds to see
# the claim and stop A, ample at load 10 (it takes a few hundredths of a second idle).
STALL_LEASE_SECONDS = 6.0
STALL_WINDOW_SECONDS = 5.5


async def test_stalled_worker_late_completion_is_rejected(faults: Faults) -> None:
    [job_id] = await faults.put(1, payload={"seconds": STALL_WINDOW_SECONDS})
    # A is stopped between two of its transactions: it runs one job and no chore for a while
    # after its claim.
    stalled = faults.worker(
        "A",
        "--concurrency",
        "1",
        lease_seconds=str(STALL_LEASE_SECONDS),
        heartbeat_seconds=str(STALL_WINDOW_SECONDS),
        reap_interval_seconds="60",
        notification_drain_seconds="60",
    )
    await faults.wait_for(lambda: _is_running_by(faults, "A"), "A to claim the job")
    claimed_at = time.monotonic()
    stalled.signal(signal.SIGSTOP)
    [claimed] = await faults.jobs()
    assert claimed.status.value == "running" and claimed.locked_by == "A", (
        f"A finished the job before it was stopped: {claimed}"
    )

    rescuer = faults.worker("B")
    await faults.wait_for(lambda: _is_running_by(faults, "B"), "B to take over the job")
    # Let A's own sleep end while it is stopped, so on SIGCONT it tries to complete at once
    # (usually while B still holds the job; if a busy machine let B finish first, A's late
    # completion is refused all the same: its lease token is stale either way).
    await asyncio.sleep(max(0.0, claimed_at + STALL_WINDOW_SECONDS + 0.3 - time.monotonic()))
    stalled.signal(signal.SIGCONT)

    await faults.wait_for(lambda: faults.all_succeeded(1), "B to complete the job")
    [job] = await faults.jobs()
    assert job.result["worker"] == "B"
    assert await faults.completions() == {job_id: 1}

    for proc in (stalled, rescuer):
        proc.signal(signal.SIGTERM)
    code_a, summary_a = stalled.finish()
    code_b, summary_b = rescuer.finish()
    assert (code_a, code_b) == (0, 0)
    assert summary_a["succeeded"] == 0 and summary_a["lost"] == 1  # its result was discarded
    assert summary_b["succeeded"] == 1


async def _is_running_by(faults: Faults, worker_id: str) -> bool:
    return await _running_by(faults, worker_id) == 1


async def test_many_claimers_never_exceed_the_global_cap(faults: Faults) -> None:
    ids = await faults.put(24, payload={"seconds": 0.15}, partition="cap")
    workers = [
        faults.worker(f"c{i}", "--concurrency", "4", global_concurrency="3") for i in range(4)
    ]
    peak = 0

    async def sample_until_done() -> bool:
        nonlocal peak
        async with faults.db.transaction() as conn:
            running = await conn.scalar(
                select(func.count()).select_from(jobs).where(jobs.c.status == "running")
            )
        peak = max(peak, running or 0)
        assert peak <= 3, f"{peak} jobs running at once under a global cap of 3"
        return await faults.all_succeeded(len(ids))

    await wait_until_async(sample_until_done, what="the capped jobs to finish", interval=0.005)
    assert peak >= 2  # the cap was actually contended

    # The handlers' own wall-clock intervals never overlap more than three deep either.
    edges = sorted(
        [(j.result["started"], 1) for j in await faults.jobs()]
        + [(j.result["ended"], -1) for j in await faults.jobs()],
        key=lambda e: (e[0], e[1]),
    )
    depth = deepest = 0
    for _, step in edges:
        depth += step
        deepest = max(deepest, depth)
    assert deepest <= 3
    assert await faults.completions() == dict.fromkeys(ids, 1)
    for w in workers:
        w.signal(signal.SIGTERM)
    assert [w.finish()[0] for w in workers] == [0] * 4


async def test_poison_job_fails_after_max_attempts_with_every_error(faults: Faults) -> None:
    [job_id] = await faults.put(1, "fail", payload={"message": "boom"}, max_attempts=3)
    code, summary = faults.worker("p", "--burst").finish()
    assert code == 0
    assert summary["failed"] == 1 and summary["retried"] == 2
    [job] = await faults.jobs()
    assert job.status.value == "failed" and job.attempts == 3
    async with faults.db.transaction() as conn:
        errors = await errors_of(conn, job_id)
    assert [e.attempt for e in errors] == [1, 2, 3]
    assert all(e.error_class == "RuntimeError" and e.message == "boom" for e in errors)
    assert await faults.completions() == {}


async def test_sigterm_drains_gracefully(faults: Faults) -> None:
    short = await faults.put(2, payload={"seconds": 1.0}, prefix="short")
    long = await faults.put(2, payload={"seconds": 60}, prefix="long")
    worker = faults.worker("t", "--concurrency", "4", shutdown_grace_seconds="2.5")
    await faults.wait_for(lambda: _all_running(faults, 4), "all four jobs to start")
    started = time.monotonic()
    worker.signal(signal.SIGTERM)
    code, summary = worker.finish()
    assert code == 0
    # It gave the long jobs back after its grace (2.5 s) instead of waiting them out (60 s);
    # the margin is for a process exiting on a machine at load 10.
    assert time.monotonic() - started < 40
    assert summary["succeeded"] == 2 and summary["released"] == 2
    by_id = {j.id: j for j in await faults.jobs()}
    assert {by_id[i].status.value for i in short} == {"succeeded"}
    assert {by_id[i].status.value for i in long} == {"queued"}  # given back, not lost
    assert all(by_id[i].lease_token is None for i in long)


async def _all_running(faults: Faults, n: int) -> bool:
    return sum(1 for j in await faults.jobs() if j.status.value == "running") == n
