"""The worker end to end: handlers, burst mode, errors, cancellation, lost leases, graceful stop."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select, update
from tests.waiting import WAIT_SECONDS, worker_idle

from valuerank.db.tables import jobs
from valuerank.orgs import ensure_org
from valuerank.queue import (
    HandlerResult,
    Job,
    JobStatus,
    Permanent,
    QueueSettings,
    RateLimited,
    Snooze,
    Transient,
    Worker,
    cancel_partition,
    pause_partition,
    reap,
)
from valuerank.queue.dialect import db_now_plus
from valuerank.queue.ratelimit import block_bucket, configure_bucket
from valuerank.queue.slots import SlotScope, list_caps, org_key, set_cap

if TYPE_CHECKING:
    from tests.queue.conftest import Kit


async def test_burst_mode_runs_everything_runnable(kit: Kit) -> None:
    ids = await kit.put(12)
    (other_kind,) = await kit.put(prefix="x", kind="unknown")
    active = 0
    peak = 0

    async def double(job: Job) -> Any:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.01)
        active -= 1
        return {"double": job.payload["i"] * 2}

    worker = Worker(kit.db, settings=kit.settings, concurrency=3, handlers={"echo": double})
    stats = await worker.run_until_idle()
    assert stats.claimed == stats.succeeded == 12
    assert 1 < peak <= 3
    for n, job_id in enumerate(ids):
        job = await kit.load(job_id)
        assert job.status is JobStatus.SUCCEEDED and job.result == {"double": 2 * n}
    assert (await kit.load(other_kind)).status is JobStatus.QUEUED  # no handler: not claimed


async def test_global_concurrency_from_settings_caps_the_worker(kit: Kit) -> None:
    await kit.put(6)
    active = peak = 0

    async def handler(job: Job) -> Any:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.01)
        active -= 1

    settings = kit.settings.model_copy(update={"global_concurrency": 2})
    worker = Worker(kit.db, settings=settings, concurrency=5, handlers={"echo": handler})
    assert (await worker.run_until_idle()).succeeded == 6
    assert peak == 2
    assert await kit.slots_in_use() == {"global": 0}


async def test_errors_follow_the_policy(kit: Kit) -> None:
    (flaky,) = await kit.put(prefix="flaky", kind="flaky", max_attempts=3)
    (limited,) = await kit.put(prefix="limited", kind="limited", max_attempts=1)
    (broken,) = await kit.put(prefix="broken", kind="broken", max_attempts=5)
    (buggy,) = await kit.put(prefix="buggy", kind="buggy", max_attempts=2)
    calls: dict[str, int] = {}

    def counted(kind: str, fail_times: int, exc: Exception) -> Callable[[Job], Any]:
        async def handler(job: Job) -> Any:
            calls[kind] = calls.get(kind, 0) + 1
            if calls[kind] <= fail_times:
                raise exc
            return HandlerResult("ok", event_data={"scenario_id": kind})

        return handler

    worker = Worker(kit.db, settings=kit.settings, concurrency=2)
    worker.register("flaky", counted("flaky", 2, Transient("503")))
    worker.register("limited", counted("limited", 3, RateLimited(retry_after=0)))
    worker.register("broken", counted("broken", 99, Permanent("401")))
    worker.register("buggy", counted("buggy", 99, ZeroDivisionError("oops")))
    stats = await worker.run_until_idle()

    assert [(await kit.load(i)).status for i in (flaky, limited, broken, buggy)] == [
        JobStatus.SUCCEEDED,
        JobStatus.SUCCEEDED,
        JobStatus.FAILED,
        JobStatus.FAILED,
    ]
    assert (await kit.load(flaky)).attempts == 3
    assert (await kit.load(limited)).attempts == 1  # three 429s cost nothing
    assert calls == {"flaky": 3, "limited": 4, "broken": 1, "buggy": 2}
    assert (stats.succeeded, stats.failed, stats.retried) == (2, 2, 6)
    done = [e for e in await kit.events() if e.type == "task_complete"]
    assert {e.data["scenario_id"] for e in done} == {"flaky", "limited"}


async def test_cancellation_reaches_the_handler(kit: Kit) -> None:
    (job_id,) = await kit.put()
    started = asyncio.Event()
    seen: list[str] = []

    async def slow(job: Job) -> Any:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.append(f"cancelled, flag={job.cancel_requested}")
            raise

    worker = Worker(kit.db, settings=kit.settings, handlers={"echo": slow})
    run = asyncio.create_task(worker.run_until_idle())
    await asyncio.wait_for(started.wait(), 30)
    async with kit.db.transaction(immediate=True) as conn:
        await cancel_partition(conn, kit.org_id, "run-1")
    stats = await asyncio.wait_for(run, 30)
    assert seen == ["cancelled, flag=True"]
    assert stats.cancelled == 1
    assert (await kit.load(job_id)).status is JobStatus.CANCELLED
    assert [e.type for e in await kit.events()][-2:] == ["task_cancelled", "partition_complete"]


async def test_a_lost_lease_abandons_the_attempt(kit: Kit) -> None:
    (job_id,) = await kit.put()
    runs = 0
    first_started = asyncio.Event()

    async def handler(job: Job) -> Any:
        nonlocal runs
        runs += 1
        if runs == 1:
            first_started.set()
            await asyncio.sleep(30)  # stalls; its lease will be taken away
        return "second try"

    worker = Worker(kit.db, settings=kit.settings, handlers={"echo": handler})
    run = asyncio.create_task(worker.run_until_idle())
    await asyncio.wait_for(first_started.wait(), 30)
    # Expire the lease and reap in one transaction: between two, the stalled attempt's
    # heartbeat could renew the lease (it did, on a slow machine) and leave nothing to reap.
    async with kit.db.transaction(immediate=True) as conn:
        expired = db_now_plus(conn.dialect.name, -1)
        await conn.execute(update(jobs).where(jobs.c.id == job_id).values(lease_expires_at=expired))
        assert (await reap(conn, kit.settings)).requeued == [job_id]
    stats = await asyncio.wait_for(run, 30)
    assert stats.lost == 1 and stats.succeeded == 1
    job = await kit.load(job_id)
    assert job.status is JobStatus.SUCCEEDED and job.result == "second try" and job.attempts == 2


async def test_graceful_stop_waits_then_gives_jobs_back(kit: Kit) -> None:
    quick_id, stuck_id = await kit.put(2)
    started: set[str] = set()
    both_started = asyncio.Event()

    async def handler(job: Job) -> Any:
        started.add(job.id)
        if len(started) == 2:
            both_started.set()
        if job.id == quick_id:
            await asyncio.sleep(0.02)  # finishes within the grace period
            return "done"
        await asyncio.sleep(30)  # does not

    worker = Worker(kit.db, settings=kit.settings, concurrency=2, handlers={"echo": handler})
    run = asyncio.create_task(worker.run_forever())

    await asyncio.wait_for(both_started.wait(), WAIT_SECONDS)
    worker.stop()
    stats = await asyncio.wait_for(run, 30)
    assert (stats.succeeded, stats.released) == (1, 1)
    assert (await kit.load(quick_id)).status is JobStatus.SUCCEEDED
    stuck = await kit.load(stuck_id)
    assert stuck.status is JobStatus.QUEUED and stuck.attempts == 0
    assert set((await kit.slots_in_use()).values()) <= {0}


async def test_run_forever_picks_up_new_work(kit: Kit) -> None:
    done: list[int] = []
    all_done = asyncio.Event()

    async def handler(job: Job) -> Any:
        done.append(job.payload["i"])
        if len(done) == 3:
            all_done.set()

    worker = Worker(kit.db, settings=kit.settings, concurrency=2, handlers={"echo": handler})
    run = asyncio.create_task(worker.run_forever())
    await worker_idle(worker)  # polling, or (PostgreSQL) listening
    await kit.put(3)

    await asyncio.wait_for(all_done.wait(), WAIT_SECONDS)
    worker.stop()
    stats = await asyncio.wait_for(run, 30)
    assert stats.succeeded == 3 and sorted(done) == [0, 1, 2]
    assert await kit.status_counts() == {"succeeded": 3}


_SLOW_SUCCESS_PG = """
CREATE FUNCTION slow_success() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_sleep(0.03); RETURN NEW; END $$;
CREATE TRIGGER slow_success BEFORE UPDATE ON jobs FOR EACH ROW
  WHEN (NEW.status = 'succeeded' AND OLD.status = 'running') EXECUTE FUNCTION slow_success();
"""


async def test_a_worker_holds_at_most_twice_its_concurrency(kit: Kit) -> None:
    """Without claiming ahead: K handlers at once, and it claims while successes are being
    written, but no more than K of them wait: at most 2K of its jobs are `running` in the
    database at any time. (On PostgreSQL each success is made slow to write, so the claims
    would run far ahead.) With claiming ahead: tests/queue/test_claim_ahead.py."""
    if kit.db.url.dialect == "postgresql":
        async with kit.db.transaction() as conn:
            await conn.exec_driver_sql(_SLOW_SUCCESS_PG)
    await kit.put(30)
    seen: list[tuple[int, int, int]] = []  # (handlers, held, running in the database)

    async def handler(job: Job) -> Any:
        async with kit.db.transaction() as conn:
            running = await conn.scalar(
                select(func.count()).select_from(jobs).where(jobs.c.status == "running")
            )
        seen.append((worker.in_flight, worker.held, int(running or 0)))

    no_ahead = kit.settings.model_copy(update={"claim_ahead": 0})
    worker = Worker(kit.db, settings=no_ahead, concurrency=2, handlers={"echo": handler})
    stats = await worker.run_until_idle()
    assert stats.succeeded == 30
    assert max(h for h, _, _ in seen) <= 2
    assert max(held for _, held, _ in seen) <= 4
    assert max(r for _, _, r in seen) <= 4
    if kit.db.url.dialect == "postgresql":
        assert max(held for _, held, _ in seen) > 2  # claimed while successes were written


async def test_an_idle_worker_wakes_when_a_rate_limit_block_ends(kit: Kit) -> None:
    """A worker with nothing to claim sleeps until its next poll, or until a blocked
    provider opens again if that comes sooner: it does not lose a poll interval per 429."""
    await kit.put(1, provider="p")
    started = time.monotonic()  # before the block: it ends no sooner than 1 s from here
    async with kit.db.transaction(immediate=True) as conn:
        key = await configure_bucket(conn, "p")
        await block_bucket(conn, key, 1.0)
    done = asyncio.Event()

    async def handler(job: Job) -> Any:
        done.set()

    # A poll far beyond the wait below: only the block's end can wake the worker in time.
    slow_poll = kit.settings.model_copy(update={"poll_seconds": 4 * WAIT_SECONDS})
    worker = Worker(kit.db, settings=slow_poll, concurrency=2, handlers={"echo": handler})
    run = asyncio.create_task(worker.run_forever())
    try:
        await asyncio.wait_for(done.wait(), WAIT_SECONDS)
    finally:
        worker.stop()
        await asyncio.wait_for(run, WAIT_SECONDS)
    assert time.monotonic() - started >= 0.9  # not before the block ended (less clock skew)


async def test_burst_mode_runs_the_retries_it_makes_runnable(kit: Kit) -> None:
    """Burst mode drains what becomes runnable while it runs: a job retried at once (its
    backoff here is zero) is claimed again until it is dead-lettered."""
    (job_id,) = await kit.put(kind="poison", max_attempts=4)
    calls = 0

    async def poison(job: Job) -> Any:
        nonlocal calls
        calls += 1
        raise Transient("again")

    worker = Worker(kit.db, settings=kit.settings, concurrency=1, handlers={"poison": poison})
    stats = await worker.run_until_idle()
    assert calls == 4 and (stats.failed, stats.retried) == (1, 3)
    assert (await kit.load(job_id)).status is JobStatus.FAILED


async def test_burst_mode_waits_for_a_snoozed_job_of_a_partition_it_ran(kit: Kit) -> None:
    """A step that waits on other jobs (snoozed a moment) still runs before burst mode
    returns: the partition is left finished, not one step short."""
    await kit.put(3)
    (step,) = await kit.put(prefix="step", kind="step")
    tries = 0

    async def echo(job: Job) -> Any:
        return {"i": job.payload["i"]}

    async def step_handler(job: Job) -> Any:
        nonlocal tries
        tries += 1
        if tries < 3:
            raise Snooze(0.3, "waiting for the others")
        return {"done": True}

    worker = Worker(
        kit.db, settings=kit.settings, concurrency=2, handlers={"echo": echo, "step": step_handler}
    )
    await worker.run_until_idle()
    assert tries == 3
    assert (await kit.load(step)).status is JobStatus.SUCCEEDED


async def test_burst_mode_does_not_wait_for_what_it_never_touched_or_beyond_its_budget(
    kit: Kit,
) -> None:
    await kit.put(2)
    later = await kit.put(prefix="later", partition="run-1", delay_seconds=3600)
    # Due well within the budget (and long after this test's few claims, even on a loaded
    # machine): only its partition keeps the worker from waiting for it.
    elsewhere = await kit.put(prefix="other", partition="run-2", delay_seconds=5)

    async def echo(job: Job) -> Any:
        return None

    worker = Worker(
        kit.db,
        settings=kit.settings.model_copy(update={"burst_wait_seconds": 60}),
        concurrency=2,
        handlers={"echo": echo},
    )
    async with asyncio.timeout(10):
        stats = await worker.run_until_idle()
    assert stats.succeeded == 2
    assert (await kit.load(later[0])).status is JobStatus.QUEUED  # due past the budget
    assert (await kit.load(elsewhere[0])).status is JobStatus.QUEUED  # another partition


async def test_burst_mode_does_not_wait_for_a_paused_partition(kit: Kit) -> None:
    await kit.put(1)
    (waiting,) = await kit.put(prefix="later", delay_seconds=0.3)

    async def pause_then_return(job: Job) -> Any:
        async with kit.db.transaction(immediate=True) as conn:
            await pause_partition(conn, kit.org_id, "run-1")

    worker = Worker(
        kit.db, settings=kit.settings, concurrency=1, handlers={"echo": pause_then_return}
    )
    async with asyncio.timeout(10):
        await worker.run_until_idle()
    assert (await kit.load(waiting)).status is JobStatus.QUEUED


async def test_a_global_cap_of_zero_is_no_cap(kit: Kit) -> None:
    """0 means unlimited, as in the seed: it lifts a cap set before, and every job runs."""
    await kit.put(4)

    async def handler(job: Job) -> Any:
        return None

    capped = kit.settings.model_copy(update={"global_concurrency": 1})
    await Worker(kit.db, settings=capped, handlers={"echo": handler})._start()
    assert "global" in await kit.slots_in_use()
    unlimited = QueueSettings(**{**kit.settings.model_dump(), "global_concurrency": 0})
    worker = Worker(kit.db, settings=unlimited, concurrency=4, handlers={"echo": handler})
    assert (await worker.run_until_idle()).succeeded == 4
    assert "global" not in await kit.slots_in_use()


async def test_an_organisation_cap_of_zero_is_no_cap(kit: Kit) -> None:
    await kit.put(3)

    async def handler(job: Job) -> Any:
        return None

    settings = QueueSettings(**{**kit.settings.model_dump(), "org_concurrency": 0})
    worker = Worker(kit.db, settings=settings, concurrency=3, handlers={"echo": handler})
    assert (await worker.run_until_idle()).succeeded == 3
    assert await kit.slots_in_use() == {}


async def test_the_organisation_default_cap_follows_the_setting_and_0_lifts_it(kit: Kit) -> None:
    """Issue 21: a default cap set once could not be changed nor lifted (0 left it in force)."""
    async with kit.db.transaction() as conn:
        org_b = await ensure_org(conn, "org-b")
        org_c = await ensure_org(conn, "org-c")
    await kit.put(2, prefix="a")
    await kit.put(2, prefix="b", org_id=org_b, partition="run-b")

    async def handler(job: Job) -> Any:
        return None

    def worker(org_concurrency: int | None) -> Worker:
        settings = kit.settings.model_copy(update={"org_concurrency": org_concurrency})
        return Worker(kit.db, settings=settings, concurrency=4, handlers={"echo": handler})

    assert (await worker(1).run_until_idle()).succeeded == 4
    async with kit.db.transaction(immediate=True) as conn:
        await set_cap(conn, SlotScope.ORG, 7, org_id=org_c)  # this organisation's own cap

    async def caps() -> dict[str, tuple[int, bool]]:
        async with kit.db.transaction() as conn:
            return {c.key: (c.max, c.is_default) for c in await list_caps(conn)}

    own = {org_key(org_c): (7, False)}
    assert await caps() == {org_key(kit.org_id): (1, True), org_key(org_b): (1, True), **own}
    await worker(3)._start()  # another default changes the caps it made
    assert await caps() == {org_key(kit.org_id): (3, True), org_key(org_b): (3, True), **own}
    await worker(None)._start()  # unset: the fleet's default stays
    assert len(await caps()) == 3
    await worker(0)._start()  # 0: no default cap any more; an organisation's own stays
    assert await caps() == own
    await kit.put(3, prefix="late")
    late = worker(0)
    assert (await late.run_until_idle()).succeeded == 3
    assert await caps() == own  # and the claim made none again
