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
concurrency slots, until then: caps count it). So a worker of concurrency K runs at most K
handlers at once and, without claiming ahead, holds at most 2K jobs (`held`: claimed and not
yet recorded as done): it claims no more while K successes wait to be written.

Claiming ahead: when its jobs are short, a worker also claims A more jobs than it has places
for, which wait in the worker (leased, `running` in the database) and start as places free,
so one claim statement serves many short jobs. A is as many as it expects to start within
`claim_ahead_seconds` (at most half a heartbeat), from how long its handlers take (a moving
average, or the longest running handler if longer), at most `claim_ahead`; 0 until a handler
has returned. It then holds at most 2(K + A) jobs, and refills once half of A is free (or a
place would otherwise stay empty). Only a claim no cap, rate bucket or organisation default
applies to takes jobs ahead (a waiting job would hold slots or a reservation). A job claimed
ahead that has not started when its first heartbeat is due is handed back (queued, its
attempt refunded); a stopping worker hands back its waiting jobs at once; a killed worker's
are reaped when their leases expire, like its running ones.

Successful jobs are written by one settler task, a batch per transaction: whatever succeeded
while the previous batch was being written (no waiting to fill a batch). Every other outcome,
and a success the batch could not take, is written in a transaction of its own. On PostgreSQL
the worker keeps one connection for its claims (autocommit: a claim is one statement) and one
for its batches, between uses idle with no transaction open, so neither pays a pool checkout
and ping each time; a kept connection is dropped after any error and when the worker stops.

Waking: an idle worker claims again when one of its handlers ends, when a rate-limit block
ends, when `poll_seconds` pass, and on PostgreSQL as soon as jobs of a kind it handles are
enqueued (`wakeup`: a LISTEN connection of its own, see queue/wakeup.py; the poll remains the
safety net).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import random
import socket
import time
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeVar

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.crypto import SecretCipher
from valuerank.db.engine import Database
from valuerank.queue import lease as leases
from valuerank.queue.claim import claim
from valuerank.queue.hooks import NO_HOOKS, QueueHooks, using
from valuerank.queue.job import Job
from valuerank.queue.maintenance import Chore, MaintenanceRun, run_maintenance
from valuerank.queue.outbox.settling import DeliveryReport, deliver_due
from valuerank.queue.pending import seconds_until_due
from valuerank.queue.ratelimit import seconds_until_reopen
from valuerank.queue.reaper import reap
from valuerank.queue.settings import QueueSettings
from valuerank.queue.slots import apply_global_cap, apply_org_default
from valuerank.queue.states import JobStatus
from valuerank.queue.wakeup import Kinds, WorkerWakeup

log = logging.getLogger(__name__)

Handler = Callable[[Job], Coroutine[Any, Any, Any]]
_R = TypeVar("_R")

# Backoff after a database connection error: 0.1 s doubling up to 2 s (with jitter).
DB_RETRY_BASE_SECONDS = 0.1
DB_RETRY_CAP_SECONDS = 2.0


def is_connection_error(exc: BaseException) -> bool:
    """The database could not be reached or dropped the connection (e.g. it is restarting):
    a transient failure worth retrying, not a bug."""
    if isinstance(exc, DBAPIError):
        return exc.connection_invalidated or isinstance(exc, (OperationalError, InterfaceError))
    return isinstance(exc, (OSError, TimeoutError, PoolTimeoutError))


def db_retry_delay(failures: int) -> float:
    """The wait before retry number `failures` (1, 2, …) after connection errors."""
    ceiling = min(DB_RETRY_CAP_SECONDS, DB_RETRY_BASE_SECONDS * 2.0 ** max(0, failures - 1))
    return float(ceiling * random.uniform(0.5, 1.0))


def _log_db_failure(what: str, exc: Exception) -> None:
    """One line for a connection error (they come in bursts while a server restarts), the
    full traceback for anything else."""
    if is_connection_error(exc):
        first = str(exc).strip().splitlines()
        reason = first[0] if first else type(exc).__name__
        log.warning("%s failed, database unavailable (%s); will retry", what, reason)
    else:
        log.exception("%s failed; will try again", what)


@dataclass(frozen=True)
class HandlerResult:
    """What a handler may return instead of a bare result, to add fields to the
    `task_complete` event (e.g. a scenario id), or to report the tokens really used
    (corrects the rate bucket's estimate)."""

    value: Any
    event_data: Mapping[str, Any] | None = None
    usage_tokens: float | None = None


class StopReason(StrEnum):
    CANCEL = "cancel"  # cancellation requested: the job ends cancelled
    LOST = "lost"  # lease lost: someone else owns the job now, write nothing
    SHUTDOWN = "shutdown"  # give the job back: worker stopping, or claimed ahead too long


@dataclass
class WorkerStats:
    claimed: int = 0
    succeeded: int = 0
    failed: int = 0
    retried: int = 0
    cancelled: int = 0
    released: int = 0
    lost: int = 0
    reaped: int = 0


@dataclass
class _Running:
    job: Job
    handler_task: asyncio.Task[Any]
    reason: StopReason | None = None
    task: asyncio.Task[None] | None = field(default=None)
    began: float | None = None  # when its handler started (monotonic); None: still waiting
    placed: bool = False  # it holds one of the worker's `concurrency` places

    def stop(self, reason: StopReason) -> None:
        if self.reason is None or reason is StopReason.LOST:
            self.reason = reason
        self.handler_task.cancel()


def _succeeded(running: _Running) -> bool:
    """The handler returned (rather than raised or was cancelled)."""
    task = running.handler_task
    return not task.cancelled() and task.exception() is None


def _success(running: _Running) -> tuple[Any, Mapping[str, Any] | None, float | None]:
    """(result, event data, tokens used) of a handler that returned."""
    value = running.handler_task.result()
    if isinstance(value, HandlerResult):
        return value.value, value.event_data, value.usage_tokens
    return value, None, None


class _KeptConnection:
    """A PostgreSQL connection kept between short uses by one task at a time (none on
    SQLite, where `get` says None: use `db.transaction`)."""

    def __init__(self, db: Database, *, autocommit: bool) -> None:
        self._db = db
        self._autocommit = autocommit
        self._conn: AsyncConnection | None = None

    async def get(self) -> AsyncConnection | None:
        if self._db.url.dialect != "postgresql":
            return None
        if self._conn is None:
            conn = await self._db.engine.connect()
            if self._autocommit:
                try:
                    conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
                except BaseException:
                    await conn.close()
                    raise
            self._conn = conn
        return self._conn

    async def drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()


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
        self._running: dict[str, _Running] = {}  # handler running, or claimed ahead: waiting
        self._places = asyncio.Semaphore(concurrency)  # a handler runs holding one
        self._placed = 0  # places held: handlers running, and raised ones being settled
        self._duration: float | None = None  # moving average of successful handlers' seconds
        self._touched: set[str] = set()  # partitions this worker ran jobs of
        self._settling: dict[str, _Running] = {}  # handler returned, outcome being written
        self._wake = asyncio.Event()
        self._stopping = False
        self._last_reap = float("-inf")
        self._chores: dict[str, asyncio.Task[None]] = {}
        self._chore_due: dict[str, float] = {}
        # Work the application adds to each maintenance pass (see `add_maintenance_chore`).
        self._maintenance_chores: dict[str, Chore] = {}
        self._claim_failures = 0  # claims that raised, ever (run_forever backs off on them)
        self._abandon_settling = False  # shutdown grace over: stop retrying outcome writes
        # Successful jobs waiting for the settler, which completes them in one transaction.
        self._completions: list[tuple[_Running, asyncio.Future[bool | None]]] = []
        self._settler: asyncio.Task[None] | None = None
        # PostgreSQL: the connections claims (autocommit) and batched completions run on,
        # kept between uses (no transaction is open on them in between: no pool checkout
        # and ping per use); dropped after any error, and when the worker stops.
        self._claim_conn = _KeptConnection(db, autocommit=True)
        self._settle_conn = _KeptConnection(db, autocommit=False)
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
        """How many jobs to hold beyond `concurrency` now (see the module doc)."""
        s = self.settings
        if s.claim_ahead <= 0 or self._duration is None:
            return 0
        now = time.monotonic()
        longest = max(
            (now - r.began for r in self._running.values() if r.began is not None),
            default=0.0,
        )
        per_job = max(self._duration, longest)
        budget = min(s.claim_ahead_seconds, s.heartbeat_seconds / 2) * self.concurrency
        if per_job <= 0 or budget / per_job >= s.claim_ahead:
            return s.claim_ahead
        return int(budget / per_job)

    def _wanted(self) -> tuple[int, int]:
        """(limit, ahead) for a claim now; both 0: no claim now. `limit`: the places no job
        waits for; `ahead`: more jobs to claim ahead. The worker holds at most 2(K + A) jobs
        (no more than K + A successes waiting to be written); it refills jobs claimed ahead
        once half of A is free, so that one claim takes several."""
        k, a = self.concurrency, self._ahead()
        free = min(k + a - len(self._running), 2 * (k + a) - self.held)
        if free <= 0:
            return 0, 0
        limit = max(0, min(k - len(self._running), free))
        if limit == 0 and free < max(1, (a + 1) // 2):
            return 0, 0
        return limit, free - limit

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
            _log_db_failure("reading rate-limit blocks", exc)
            await self._claim_conn.drop()
            return None

    @_with_hooks
    async def run_forever(self) -> WorkerStats:
        """Claim and run until `stop()`; then stop claiming, give running jobs
        `shutdown_grace_seconds` to finish, and release the rest back to the queue."""
        self._stopping = False
        self._abandon_settling = False
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
                    _log_db_failure("worker pass", exc)
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
            await self._stop_chores(grace)
            await self._drop_connections()
        return self.stats

    def stop(self) -> None:
        """Ask `run_forever` to stop gracefully."""
        self._stopping = True
        self._wake.set()

    # -- periodic chores (run_forever only) -----------------------------------------------
    # `run_forever` runs maintenance every `maintenance_interval_seconds` (the fleet runs it
    # about once per interval: a run skips when another started within 90 % of the interval)
    # and delivers due webhook notifications every `notification_drain_seconds`, each as a
    # background task so a slow webhook never delays claiming; a chore still running when it
    # comes due again is not started twice; the first run comes one interval after start.
    # `run_until_idle` (burst mode) does neither: it
    # must return as soon as the jobs are done, not wait on HTTP; callers that want them
    # call `maintain()` / `drain_outbox()` themselves.

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
        now = time.monotonic()
        chores: dict[str, tuple[float, Callable[[], Coroutine[Any, Any, Any]]]] = {
            "maintenance": (self.settings.maintenance_interval_seconds, self.maintain),
            "outbox": (self.settings.notification_drain_seconds, self.drain_outbox),
        }
        for name, (interval, run) in chores.items():
            running = self._chores.get(name)
            if running is not None and not running.done():
                continue
            due = self._chore_due.setdefault(name, now + interval)  # first: one interval in
            if now < due:
                continue
            self._chore_due[name] = now + interval
            self._chores[name] = asyncio.create_task(self._chore(name, run))

    async def _chore(self, name: str, run: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        try:
            await run()
        except Exception as exc:
            _log_db_failure(name, exc)

    async def _stop_chores(self, grace: float) -> None:
        """After the jobs are settled: let running chores finish for up to `grace` seconds,
        then cancel them (a cancelled delivery comes back when its lease expires)."""
        tasks = [t for t in self._chores.values() if not t.done()]
        if tasks and grace > 0:
            await asyncio.wait(tasks, timeout=grace)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        self._chores.clear()

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
            _log_db_failure("reaper", exc)

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
            _log_db_failure("claim", exc)
            await self._claim_conn.drop()
            return False
        for job in jobs:
            self.stats.claimed += 1
            self._touched.add(job.partition)
            handler_task = asyncio.create_task(self._run_handler(job))
            running = _Running(job, handler_task)
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
        self._duration = took if self._duration is None else 0.8 * self._duration + 0.2 * took
        self._free_place(running)
        return result

    def _free_place(self, running: _Running) -> None:
        if running.placed:
            running.placed = False
            self._placed -= 1
            self._places.release()

    async def _drop_connections(self) -> None:
        await self._claim_conn.drop()
        await self._settle_conn.drop()

    @contextlib.asynccontextmanager
    async def _settle_transaction(self) -> AsyncIterator[AsyncConnection]:
        """The batched completions' transaction, on the kept connection (PostgreSQL)."""
        conn = await self._settle_conn.get()
        if conn is None:
            async with self.db.transaction(immediate=True) as conn:
                yield conn
            return
        try:
            async with conn.begin():
                yield conn
        except BaseException:
            await self._settle_conn.drop()
            raise

    async def _supervise(self, running: _Running) -> None:
        # The heartbeat task starts at the first beat: most jobs end before it (a timer is
        # far cheaper to cancel than a task).
        beat: asyncio.Task[None] | None = None

        def start_beating() -> None:
            nonlocal beat
            if running.began is None:  # claimed ahead and still waiting: too long, hand back
                running.stop(StopReason.SHUTDOWN)
                return
            beat = asyncio.create_task(self._heartbeat(running, first_delay=0.0))

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
            if _succeeded(running):
                self._settling[running.job.id] = self._running.pop(running.job.id, running)
                self._wake.set()
            await self._settle(running)
        finally:
            timer.cancel()
            if beat is not None:
                beat.cancel()
            self._free_place(running)
            self._running.pop(running.job.id, None)
            self._settling.pop(running.job.id, None)
            self._wake.set()

    async def _heartbeat(self, running: _Running, *, first_delay: float | None = None) -> None:
        job = running.job
        delay, failures = self.settings.heartbeat_seconds, 0
        if first_delay is not None:
            delay = first_delay
        while True:
            await asyncio.sleep(delay)
            try:
                async with self.db.transaction(immediate=True) as conn:
                    state = await leases.heartbeat(
                        conn, job.lease, lease_seconds=self.settings.lease_seconds
                    )
            except Exception as exc:  # retry soon: the lease is running out meanwhile
                failures += 1
                _log_db_failure(f"heartbeat of job {job.id}", exc)
                delay = min(self.settings.heartbeat_seconds, db_retry_delay(failures))
                continue
            delay, failures = self.settings.heartbeat_seconds, 0
            if not state.held:
                log.warning("job %s: lease lost, abandoning the attempt", job.id)
                running.stop(StopReason.LOST)
                return
            if state.cancel_requested and not job.cancel_requested:
                job.cancel_requested = True
                running.stop(StopReason.CANCEL)

    async def _settle(self, running: _Running) -> None:
        """Record the outcome; on a connection error try again (with backoff) until it lands,
        the fenced write finds the lease lost, or the shutdown grace is over.

        A successful job goes to the settler, which completes every job that succeeded
        meanwhile in one transaction (group commit: no waiting, a batch is whatever finished
        while the previous one was being written); a job the batch could not take (it holds
        slots or has a rate bucket, or the batch failed other than by a lost connection) is
        then settled on its own, like every other outcome."""
        if _succeeded(running):
            done = asyncio.get_running_loop().create_future()
            self._completions.append((running, done))
            if self._settler is None or self._settler.done():
                self._settler = asyncio.create_task(self._settle_completions())
            if await done is not None:
                return
        await self._settle_alone(running)

    async def _settle_completions(self) -> None:
        """The settler: complete the waiting successful jobs, a batch at a time."""
        while self._completions:
            batch, self._completions = self._completions, []
            try:
                outcome = await self._complete_batch([r for r, _ in batch])
            except BaseException:
                outcome = {}
                raise
            finally:
                for running, done in batch:
                    if not done.done():
                        done.set_result(outcome.get(running.job.id))

    async def _complete_batch(self, batch: list[_Running]) -> dict[str, bool | None]:
        """{job id: completed (True) or lease lost (False); None: settle it alone}."""
        completions = [leases.Completion(r.job.lease, *_success(r)) for r in batch]
        failures = 0
        while True:
            try:
                async with self._settle_transaction() as conn:
                    outcome = await leases.complete_many(conn, completions)
            except Exception as exc:
                if is_connection_error(exc) and not self._abandon_settling:
                    failures += 1
                    _log_db_failure(f"recording the outcome of {len(batch)} job(s)", exc)
                    await asyncio.sleep(db_retry_delay(failures))
                    continue
                if not is_connection_error(exc):
                    log.warning("completing %d job(s) together failed (%r)", len(batch), exc)
                return {}  # each job on its own: one bad outcome costs only itself
            for ok in outcome.values():  # counted only once the transaction committed
                if ok is not None:
                    self._count(JobStatus.SUCCEEDED if ok else None)
            return outcome

    async def _settle_alone(self, running: _Running) -> None:
        job, reason = running.job, running.reason  # why the handler ended, fixed now
        failures = 0
        while True:
            try:
                async with self.db.transaction(immediate=True) as conn:
                    count = await self._record(conn, running, reason)
            except Exception as exc:
                if is_connection_error(exc) and not self._abandon_settling:
                    failures += 1
                    _log_db_failure(f"recording the outcome of job {job.id}", exc)
                    await asyncio.sleep(db_retry_delay(failures))
                    continue
                log.error(
                    "could not record the outcome of job %s; its lease will expire",
                    job.id,
                    exc_info=not is_connection_error(exc),
                )
                return
            count()  # only once the transaction committed
            return

    async def _record(
        self, conn: AsyncConnection, running: _Running, reason: StopReason | None
    ) -> Callable[[], None]:
        """Write the outcome in `conn`; returns how to count it once committed."""
        job, task = running.job, running.handler_task
        if not task.cancelled() and task.exception() is None:
            value, event_data, usage = _success(running)
            ok = await leases.complete(
                conn, job.lease, value, event_data=event_data, usage_tokens=usage
            )
            return lambda: self._count(JobStatus.SUCCEEDED if ok else None)
        if reason is StopReason.LOST:
            return lambda: self._count(None)
        if reason is StopReason.CANCEL:
            ok = await leases.cancel(conn, job.lease)
            return lambda: self._count(JobStatus.CANCELLED if ok else None)
        if reason is StopReason.SHUTDOWN:
            ok = await leases.release(conn, job.lease)

            def released() -> None:
                if ok:
                    self.stats.released += 1
                else:
                    self._count(None)

            return released
        exc: BaseException = (
            asyncio.CancelledError("handler cancelled itself")
            if task.cancelled()
            else task.exception()  # type: ignore[assignment]
        )
        if not isinstance(exc, asyncio.CancelledError):
            log.info("job %s (%s) raised %r", job.id, job.kind, exc)
        status = await leases.settle_error(conn, job, exc, settings=self.settings, rng=self._rng)
        return lambda: self._count(status)

    def _count(self, status: JobStatus | None) -> None:
        if status is None:
            self.stats.lost += 1
        elif status is JobStatus.SUCCEEDED:
            self.stats.succeeded += 1
        elif status is JobStatus.FAILED:
            self.stats.failed += 1
        elif status is JobStatus.CANCELLED:
            self.stats.cancelled += 1
        else:
            self.stats.retried += 1

    async def _shutdown(self, grace: float) -> None:
        """Wait up to `grace` seconds for running jobs, then release the rest."""
        self._stopping = True
        for running in list(self._running.values()):  # claimed ahead, not started: back now
            if running.began is None:
                running.stop(StopReason.SHUTDOWN)
        tasks = self._supervisors()
        if tasks and grace > 0:
            await asyncio.wait(tasks, timeout=grace)
        self._abandon_settling = True  # an outcome still unwritten is left to the reaper
        for running in list(self._running.values()):  # handlers still running
            running.stop(StopReason.SHUTDOWN)
        tasks = self._supervisors()
        if tasks:
            await asyncio.wait(tasks)
