"""The asyncio worker: claims jobs, runs their handlers, keeps their leases alive, settles them.

Handlers are registered per kind: `async def handler(job: Job) -> result`. A handler is
cancelled (asyncio.CancelledError) when the job's cancellation is requested or its lease is
lost, and `job.cancel_requested` is set for handlers that prefer to check a flag. No database
transaction is open while a handler runs: claiming, each heartbeat and the settling of an
outcome are short transactions of their own. A database that is unreachable for a while
(e.g. restarting) never ends the worker: claims, heartbeats, reaping and chores are retried
with a short backoff, and a settling write that fails on a connection error is retried until
it lands (the write is fenced by the lease token, so it can never apply twice; if the lease
was lost meanwhile it is simply discarded). Any other settling failure leaves the job to the
reaper once its lease expires: at-least-once, never lost.

Throughput: when a handler returns successfully, its place in the worker frees at once and the
next claim runs while the success is being written (the job stays `running`, holding its
concurrency slots, until then: caps count it). How many jobs a claim asks for, and claiming
ahead when jobs are short: queue/claim_ahead.py. Writing the outcomes (successes in batches,
by one settler task): queue/settler.py. A job in the worker's hands and its heartbeat:
queue/running.py. Maintenance and webhook deliveries on a schedule: queue/chores.py. Living
through a database that is away: queue/db_retry.py. On PostgreSQL the worker keeps one
connection for its claims (autocommit: a claim is one statement), idle between uses.

Waking: an idle worker claims again when one of its handlers ends, when a rate-limit block
ends, when `poll_seconds` pass, and on PostgreSQL as soon as jobs of a kind it handles are
enqueued (`wakeup`: a LISTEN connection of its own, see queue/wakeup.py; the poll remains the
safety net).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import random
import socket
import time
import uuid
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, TypeVar

from valuerank.crypto import SecretCipher
from valuerank.db.engine import Database
from valuerank.queue.chores import ChoreRun, ChoreScheduler
from valuerank.queue.claim import claim
from valuerank.queue.claim_ahead import claim_sizes, jobs_ahead, moving_duration
from valuerank.queue.db_retry import KeptConnection, db_retry_delay, log_db_failure
from valuerank.queue.hooks import NO_HOOKS, QueueHooks, using
from valuerank.queue.job import Job
from valuerank.queue.maintenance import Chore, MaintenanceRun, run_maintenance
from valuerank.queue.outbox.settling import DeliveryReport, deliver_due
from valuerank.queue.pending import seconds_until_due
from valuerank.queue.ratelimit import seconds_until_reopen
from valuerank.queue.reaper import reap
from valuerank.queue.running import Handler as Handler
from valuerank.queue.running import HandlerResult as HandlerResult
from valuerank.queue.running import Running, StopReason, heartbeat, succeeded
from valuerank.queue.running import WorkerStats as WorkerStats
from valuerank.queue.settings import QueueSettings
from valuerank.queue.settler import Settler
from valuerank.queue.slots import apply_global_cap, apply_org_default
from valuerank.queue.wakeup import Kinds, WorkerWakeup

_R = TypeVar("_R")


def _with_hooks(
    method: Callable[..., Coroutine[Any, Any, _R]],
) -> Callable[..., Coroutine[Any, Any, _R]]:
    """Run a worker's loop with its hooks in effect (and the tasks it starts: claims,
    handlers, settling, chores)."""

    @functools.wraps(method)
    async def wrapper(self: Worker, *args: Any, **kwargs: Any) -> _R:
        with using(self.hooks):
            return await method(self, *args, **kwargs)

    return wrapper


def default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class Worker:
    """Runs up to `concurrency` jobs at once in this process."""

    def __init__(
        self,
        db: Database,
        *,
        settings: QueueSettings | None = None,
        concurrency: int = 1,
        worker_id: str | None = None,
        handlers: Mapping[str, Handler] | None = None,
        rng: random.Random | None = None,
        cipher: SecretCipher | None = None,
        hooks: QueueHooks = NO_HOOKS,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.db = db
        self.settings = settings or QueueSettings()
        self.concurrency = concurrency
        self.worker_id = worker_id or default_worker_id()
        self.stats = WorkerStats()
        self._handlers: dict[str, Handler] = dict(handlers or {})
        # What the application tells the queue about its partitions (queue/hooks.py), in
        # effect while the worker runs: given here, never found by what was imported.
        self.hooks = hooks
        self._rng = rng
        # Decrypts webhook signing secrets (VALUERANK_SECRET_KEY, given by the caller): without
        # it, deliveries of webhooks that have a secret fail unsent and are retried.
        self._cipher = cipher
        self._running: dict[str, Running] = {}  # handler running, or claimed ahead: waiting
        self._places = asyncio.Semaphore(concurrency)  # a handler runs holding one
        self._placed = 0  # places held: handlers running, and raised ones being settled
        self._duration: float | None = None  # moving average of successful handlers' seconds
        self._touched: set[str] = set()  # partitions this worker ran jobs of
        self._settling: dict[str, Running] = {}  # handler returned, outcome being written
        self._wake = asyncio.Event()
        self._stopping = False
        self._last_reap = float("-inf")
        self._chores = ChoreScheduler()
        # Work the application adds to each maintenance pass (see `add_maintenance_chore`).
        self._maintenance_chores: dict[str, Chore] = {}
        self._claim_failures = 0  # claims that raised, ever (run_forever backs off on them)
        # Writes the jobs' outcomes (successes in batches) and counts them in `stats`.
        self._settler = Settler(db, self.settings, self.stats, rng=rng)
        # PostgreSQL: the connection claims run on (autocommit), kept between uses (no
        # transaction is open on it in between: no pool checkout and ping per use); dropped
        # after any error, and when the worker stops.
        self._claim_conn = KeptConnection(db, autocommit=True)
        # PostgreSQL: wakes the idle worker as soon as jobs are enqueued (queue/wakeup.py);
        # None on SQLite, where the worker polls.
        self.wakeup: WorkerWakeup | None = None
        if db.url.dialect == "postgresql":
            self.wakeup = WorkerWakeup(
                db, worker_id=self.worker_id, wants=self._wants, wake=self._wake.set
            )

    # -- registry -------------------------------------------------------------------------

    def register(self, kind: str, handler: Handler) -> None:
        """Run jobs of `kind` with `handler`; the worker only claims kinds it can run."""
        self._handlers[kind] = handler

    def add_hooks(self, hooks: QueueHooks) -> None:
        """Add `hooks` to the ones this worker runs with (see queue/hooks.py)."""
        self.hooks = self.hooks + hooks

    def add_maintenance_chore(self, name: str, chore: Chore) -> None:
        """Do `chore` in every maintenance pass of this worker, in its transaction and under its
        lock (e.g. the pipeline's stale-run reaping); its result is recorded under `name`."""
        self._maintenance_chores[name] = chore

    @property
    def maintenance_chores(self) -> dict[str, Chore]:
        return dict(self._maintenance_chores)

    def handles(self, kind: str) -> Callable[[Handler], Handler]:
        """Decorator form of `register`."""

        def decorate(handler: Handler) -> Handler:
            self.register(kind, handler)
            return handler

        return decorate

    @property
    def in_flight(self) -> int:
        """Jobs whose handler is running (at most `concurrency`). A job leaves this count when
        its handler returns: the worker then claims its next job while that success is being
        written (the job stays `running`, holding its slots, until written). A handler that
        raised leaves it only once its outcome is written."""
        return self._placed

    @property
    def waiting(self) -> int:
        """Jobs claimed ahead whose handler has not started yet."""
        return len(self._running) - self._placed

    @property
    def held(self) -> int:
        """Jobs this worker claimed and has not yet recorded as done: handlers running, jobs
        claimed ahead, and outcomes being written; at most 2 × (`concurrency` + the jobs it
        may claim ahead) (see `_wanted`)."""
        return len(self._running) + len(self._settling)

    def _ahead(self) -> int:
        """How many jobs to hold beyond `concurrency` now (queue/claim_ahead.py)."""
        began = [r.began for r in self._running.values() if r.began is not None]
        return jobs_ahead(self.settings, self.concurrency, self._duration, began, time.monotonic())

    def _wanted(self) -> tuple[int, int]:
        """(limit, ahead) for a claim now; both 0: no claim now (queue/claim_ahead.py)."""
        return claim_sizes(self.concurrency, self._ahead(), len(self._running), self.held)

    def _free(self) -> int:
        """How many jobs a claim would ask for now (0: no claim now)."""
        return sum(self._wanted())

    def _wants(self, kinds: Kinds) -> bool:
        """Whether jobs of `kinds` (None: any) just made claimable are worth a claim now; with
        no free place, the next claim comes when a handler ends anyway."""
        if self._stopping or self._free() <= 0:
            return False
        return kinds is None or not kinds.isdisjoint(self._handlers)

    def _supervisors(self) -> list[asyncio.Task[None]]:
        jobs = [*self._running.values(), *self._settling.values()]
        return [r.task for r in jobs if r.task is not None]

    # -- main loops -----------------------------------------------------------------------

    @_with_hooks
    async def run_until_idle(self) -> WorkerStats:
        """Burst mode: run what is runnable now and what it makes runnable, then return.

        Before returning it waits for the jobs still queued in the partitions it worked on
        (a step snoozed until other jobs end, a retry after a backoff) as long as the next
        one falls due within `burst_wait_seconds`, so the partitions it touched are left
        finished, not one step short. Paused partitions and providers are not waited for."""
        await self._start()
        await self._reap(force=True)
        idle_since: float | None = None
        try:
            while True:
                self._wake.clear()  # set when a handler returns or an outcome is written
                await self._fill()
                if self._running or self._settling:
                    idle_since = None
                    await self._wake.wait()
                    await self._reap()
                    continue
                if self._wake.is_set():
                    continue  # an outcome was written during that claim: it may have made
                    # a job runnable (a retry), so claim once more
                now = time.monotonic()
                idle_since = now if idle_since is None else idle_since
                wait = await self._burst_wait(self.settings.burst_wait_seconds - (now - idle_since))
                if wait is None:
                    return self.stats
                if self.wakeup is not None:
                    self.wakeup.start()  # jobs enqueued meanwhile end the wait early
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), wait)
                await self._reap()
        finally:
            if self.wakeup is not None:
                await self.wakeup.stop()
            await self._drop_connections()

    async def _burst_wait(self, budget: float) -> float | None:
        """How long an idle burst worker sleeps before claiming again: until the next queued
        job of a partition it touched is due (at most a poll interval); None to stop."""
        if budget <= 0 or not self._touched:
            return None
        async with self.db.transaction() as conn:
            due = await seconds_until_due(conn, self._touched, self._handlers)
        if due is None or due > budget:
            return None
        if due <= 0:  # due but not claimed: held back by a rate-limit block, perhaps
            reopen = await self._reopen_in()
            if reopen is not None:
                due = reopen
        return min(max(due, 0.01), self.settings.poll_seconds)

    async def _until_reopen(self, wait: float) -> float:
        """`wait`, or less when a rate-limit block ends sooner: its provider's jobs can then
        be claimed at once (a worker with nothing to claim would otherwise notice only at
        its next poll)."""
        reopen = await self._reopen_in()
        return wait if reopen is None else min(wait, max(reopen, 0.01))

    async def _reopen_in(self) -> float | None:
        """Seconds until the first rate-limit block ends (None: none, or unknown now). On
        PostgreSQL one statement on the kept claim connection: an idle worker asks after every
        claim that came back short."""
        try:
            kept = await self._claim_conn.get()
            if kept is None:
                async with self.db.transaction() as conn:
                    return await seconds_until_reopen(conn)
            async with kept.begin():  # autocommit: no BEGIN/COMMIT is sent
                return await seconds_until_reopen(kept)
        except Exception as exc:
            log_db_failure("reading rate-limit blocks", exc)
            await self._claim_conn.drop()
            return None

    @_with_hooks
    async def run_forever(self) -> WorkerStats:
        """Claim and run until `stop()`; then stop claiming, give running jobs
        `shutdown_grace_seconds` to finish, and release the rest back to the queue."""
        self._stopping = False
        self._settler.abandoned = False
        grace = self.settings.shutdown_grace_seconds
        await self._start()
        if self.wakeup is not None:
            self.wakeup.start()  # its first connection wakes the loop once more (catch-up)
        streak = 0  # passes in a row whose claim failed
        try:
            while not self._stopping:
                self._wake.clear()  # a handler returning during this pass wakes the next
                failures_before = self._claim_failures
                saturated = False
                try:
                    await self._reap()
                    self._schedule_chores()
                    saturated = await self._fill()
                except Exception as exc:  # nothing may end the loop: log, back off, go on
                    self._claim_failures += 1
                    log_db_failure("worker pass", exc)
                wait = self.settings.poll_seconds
                if self._claim_failures > failures_before:
                    streak += 1
                    wait = max(wait, db_retry_delay(streak))
                else:
                    streak = 0
                    if self._free() > 0:
                        if saturated or self._wake.is_set():
                            continue  # more to claim, or woken during the claim: claim now
                        wait = await self._until_reopen(wait)  # it came back short
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), wait)
        except asyncio.CancelledError:
            grace = 0.0
            raise
        finally:
            if self.wakeup is not None:
                await self.wakeup.stop()  # no claims from here on
            await self._shutdown(grace)
            await self._chores.stop(grace)
            await self._drop_connections()
        return self.stats

    def stop(self) -> None:
        """Ask `run_forever` to stop gracefully."""
        self._stopping = True
        self._wake.set()

    # -- periodic chores (run_forever only; queue/chores.py) -------------------------------

    @_with_hooks
    async def maintain(self) -> MaintenanceRun | None:
        """One maintenance run, unless another ran within 90 % of the interval."""
        return await run_maintenance(
            self.db,
            self.settings,
            worker_id=self.worker_id,
            trigger="worker",
            skip_if_ran_within=0.9 * self.settings.maintenance_interval_seconds,
            chores=self._maintenance_chores,
        )

    async def drain_outbox(self, *, limit: int = 50, timeout: float = 10.0) -> DeliveryReport:
        """Deliver the due webhook notifications, once."""
        return await deliver_due(
            self.db, limit=limit, timeout=timeout, rng=self._rng, cipher=self._cipher
        )

    def _schedule_chores(self) -> None:
        chores: dict[str, tuple[float, ChoreRun]] = {
            "maintenance": (self.settings.maintenance_interval_seconds, self.maintain),
            "outbox": (self.settings.notification_drain_seconds, self.drain_outbox),
        }
        self._chores.schedule(chores)

    # -- internals ------------------------------------------------------------------------

    async def _start(self) -> None:
        """Apply the settings' global cap and per-organisation default to the caps the fleet
        has (0 lifts them); the claim gives the default to organisations without a cap."""
        s = self.settings
        if s.global_concurrency is not None or s.org_concurrency is not None:
            async with self.db.transaction(immediate=True) as conn:
                await apply_global_cap(conn, s.global_concurrency)
                await apply_org_default(conn, s.org_concurrency)

    async def _reap(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_reap < self.settings.reap_interval_seconds:
            return
        self._last_reap = now
        try:
            async with self.db.transaction(immediate=True) as conn:
                reaped = await reap(conn, self.settings)
            self.stats.reaped += reaped.total
        except Exception as exc:
            log_db_failure("reaper", exc)

    async def _fill(self) -> bool:
        """Claim for the free capacity; True if it got all it asked for."""
        limit, ahead = self._wanted()
        if limit + ahead <= 0 or self._stopping or not self._handlers:
            return False
        try:
            jobs = await claim(
                self.db,
                worker_id=self.worker_id,
                limit=limit,
                ahead=ahead,
                settings=self.settings,
                kinds=sorted(self._handlers),
                autocommit=await self._claim_conn.get(),
            )
        except Exception as exc:
            self._claim_failures += 1
            log_db_failure("claim", exc)
            await self._claim_conn.drop()
            return False
        for job in jobs:
            self.stats.claimed += 1
            self._touched.add(job.partition)
            handler_task = asyncio.create_task(self._run_handler(job))
            running = Running(job, handler_task)
            running.task = asyncio.create_task(self._supervise(running))
            self._running[job.id] = running
        return len(jobs) == limit + ahead

    async def _run_handler(self, job: Job) -> Any:
        """The job's handler, once a place is free (at once unless it was claimed ahead). A
        handler that returned frees its place here; one that raised keeps it until its
        outcome is written (`_supervise`)."""
        running = self._running[job.id]  # registered before this task first runs
        await self._places.acquire()
        running.placed, running.began = True, time.monotonic()
        self._placed += 1
        result = await self._handlers[job.kind](job)
        took = time.monotonic() - running.began
        self._duration = moving_duration(self._duration, took)
        self._free_place(running)
        return result

    def _free_place(self, running: Running) -> None:
        if running.placed:
            running.placed = False
            self._placed -= 1
            self._places.release()

    async def _drop_connections(self) -> None:
        await self._claim_conn.drop()
        await self._settler.drop_connection()

    async def _supervise(self, running: Running) -> None:
        # The heartbeat task starts at the first beat: most jobs end before it (a timer is
        # far cheaper to cancel than a task).
        beat: asyncio.Task[None] | None = None

        def start_beating() -> None:
            nonlocal beat
            if running.began is None:  # claimed ahead and still waiting: too long, hand back
                running.stop(StopReason.SHUTDOWN)
                return
            beat = asyncio.create_task(heartbeat(self.db, self.settings, running, first_delay=0.0))

        timer = asyncio.get_running_loop().call_later(
            self.settings.heartbeat_seconds, start_beating
        )
        try:
            await asyncio.wait([running.handler_task])
            timer.cancel()
            if beat is not None:
                beat.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await beat
            # A handler that returned frees its place at once (see `in_flight`); one that
            # raised keeps it until its outcome is written, so that what the error tells
            # (a 429 blocking the provider's bucket, a backoff) is known before the next claim.
            if succeeded(running):
                self._settling[running.job.id] = self._running.pop(running.job.id, running)
                self._wake.set()
            await self._settler.settle(running)
        finally:
            timer.cancel()
            if beat is not None:
                beat.cancel()
            self._free_place(running)
            self._running.pop(running.job.id, None)
            self._settling.pop(running.job.id, None)
            self._wake.set()

    async def _shutdown(self, grace: float) -> None:
        """Wait up to `grace` seconds for running jobs, then release the rest."""
        self._stopping = True
        for running in list(self._running.values()):  # claimed ahead, not started: back now
            if running.began is None:
                running.stop(StopReason.SHUTDOWN)
        tasks = self._supervisors()
        if tasks and grace > 0:
            await asyncio.wait(tasks, timeout=grace)
        self._settler.abandoned = True  # an outcome still unwritten is left to the reaper
        for running in list(self._running.values()):  # handlers still running
            running.stop(StopReason.SHUTDOWN)
        tasks = self._supervisors()
        if tasks:
            await asyncio.wait(tasks)
