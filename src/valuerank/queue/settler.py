"""Writing what became of the worker's jobs: the group-commit settler and the outcomes settled
one by one.

Successful jobs are written by one settler task, a batch per transaction: whatever succeeded
while the previous batch was being written (no waiting to fill a batch). Every other outcome,
and a success the batch could not take, is written in a transaction of its own. On PostgreSQL
the batches run on one kept connection, idle with no transaction open between uses (no pool
checkout and ping each time), dropped after any error and when the worker stops.

A settling write that fails on a connection error is retried until it lands (the write is
fenced by the lease token, so it can never apply twice; if the lease was lost meanwhile it is
simply discarded), until the worker's shutdown grace is over (`abandon`). Any other failure
leaves the job to the reaper once its lease expires: at-least-once, never lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Callable

from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.engine import Database
from valuerank.queue import lease as leases
from valuerank.queue.db_retry import (
    KeptConnection,
    db_retry_delay,
    is_connection_error,
    log,
    log_db_failure,
)
from valuerank.queue.running import Running, StopReason, WorkerStats, succeeded, success
from valuerank.queue.settings import QueueSettings
from valuerank.queue.states import JobStatus


class Settler:
    """Writes the outcomes of one worker's jobs, counting them in its `stats` once committed."""

    def __init__(
        self,
        db: Database,
        settings: QueueSettings,
        stats: WorkerStats,
        *,
        rng: random.Random | None = None,
    ) -> None:
        self.db = db
        self.settings = settings
        self.stats = stats
        self._rng = rng
        self.abandoned = False  # shutdown grace over: stop retrying outcome writes
        # Successful jobs waiting for the settler, which completes them in one transaction.
        self._completions: list[tuple[Running, asyncio.Future[bool | None]]] = []
        self._task: asyncio.Task[None] | None = None
        self._conn = KeptConnection(db, autocommit=False)

    async def drop_connection(self) -> None:
        await self._conn.drop()

    async def settle(self, running: Running) -> None:
        """Record the outcome; on a connection error try again (with backoff) until it lands,
        the fenced write finds the lease lost, or the shutdown grace is over.

        A successful job goes to the settler, which completes every job that succeeded
        meanwhile in one transaction (group commit: no waiting, a batch is whatever finished
        while the previous one was being written); a job the batch could not take (it holds
        slots or has a rate bucket, or the batch failed other than by a lost connection) is
        then settled on its own, like every other outcome."""
        if succeeded(running):
            done = asyncio.get_running_loop().create_future()
            self._completions.append((running, done))
            if self._task is None or self._task.done():
                self._task = asyncio.create_task(self._settle_completions())
            if await done is not None:
                return
        await self._settle_alone(running)

    @contextlib.asynccontextmanager
    async def _transaction(self) -> AsyncIterator[AsyncConnection]:
        """The batched completions' transaction, on the kept connection (PostgreSQL)."""
        conn = await self._conn.get()
        if conn is None:
            async with self.db.transaction(immediate=True) as conn:
                yield conn
            return
        try:
            async with conn.begin():
                yield conn
        except BaseException:
            await self._conn.drop()
            raise

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

    async def _complete_batch(self, batch: list[Running]) -> dict[str, bool | None]:
        """{job id: completed (True) or lease lost (False); None: settle it alone}."""
        completions = [leases.Completion(r.job.lease, *success(r)) for r in batch]
        failures = 0
        while True:
            try:
                async with self._transaction() as conn:
                    outcome = await leases.complete_many(conn, completions)
            except Exception as exc:
                if is_connection_error(exc) and not self.abandoned:
                    failures += 1
                    log_db_failure(f"recording the outcome of {len(batch)} job(s)", exc)
                    await asyncio.sleep(db_retry_delay(failures))
                    continue
                if not is_connection_error(exc):
                    log.warning("completing %d job(s) together failed (%r)", len(batch), exc)
                return {}  # each job on its own: one bad outcome costs only itself
            for ok in outcome.values():  # counted only once the transaction committed
                if ok is not None:
                    self.stats.count(JobStatus.SUCCEEDED if ok else None)
            return outcome

    async def _settle_alone(self, running: Running) -> None:
        job, reason = running.job, running.reason  # why the handler ended, fixed now
        failures = 0
        while True:
            try:
                async with self.db.transaction(immediate=True) as conn:
                    count = await self._record(conn, running, reason)
            except Exception as exc:
                if is_connection_error(exc) and not self.abandoned:
                    failures += 1
                    log_db_failure(f"recording the outcome of job {job.id}", exc)
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
        self, conn: AsyncConnection, running: Running, reason: StopReason | None
    ) -> Callable[[], None]:
        """Write the outcome in `conn`; returns how to count it once committed."""
        job, task = running.job, running.handler_task
        stats = self.stats
        if not task.cancelled() and task.exception() is None:
            value, event_data, usage = success(running)
            ok = await leases.complete(
                conn, job.lease, value, event_data=event_data, usage_tokens=usage
            )
            return lambda: stats.count(JobStatus.SUCCEEDED if ok else None)
        if reason is StopReason.LOST:
            return lambda: stats.count(None)
        if reason is StopReason.CANCEL:
            ok = await leases.cancel(conn, job.lease)
            return lambda: stats.count(JobStatus.CANCELLED if ok else None)
        if reason is StopReason.SHUTDOWN:
            ok = await leases.release(conn, job.lease)

            def released() -> None:
                if ok:
                    stats.released += 1
                else:
                    stats.count(None)

            return released
        exc: BaseException = (
            asyncio.CancelledError("handler cancelled itself")
            if task.cancelled()
            else task.exception()  # type: ignore[assignment]
        )
        if not isinstance(exc, asyncio.CancelledError):
            log.info("job %s (%s) raised %r", job.id, job.kind, exc)
        status = await leases.settle_error(conn, job, exc, settings=self.settings, rng=self._rng)
        return lambda: stats.count(status)
