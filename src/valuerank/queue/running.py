"""A job in a worker's hands: its handler's task, why it was stopped, what it returned, the
heartbeat that keeps its lease, and the worker's tally of outcomes.

A handler is cancelled (asyncio.CancelledError) when the job's cancellation is requested or
its lease is lost, and `job.cancel_requested` is set for handlers that prefer to check a flag.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from valuerank.db.engine import Database
from valuerank.queue import lease as leases
from valuerank.queue.db_retry import db_retry_delay, log, log_db_failure
from valuerank.queue.job import Job
from valuerank.queue.settings import QueueSettings
from valuerank.queue.states import JobStatus

Handler = Callable[[Job], Coroutine[Any, Any, Any]]


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

    def count(self, status: JobStatus | None) -> None:
        """Count a settled outcome: the job's status after it (None: its lease was lost)."""
        if status is None:
            self.lost += 1
        elif status is JobStatus.SUCCEEDED:
            self.succeeded += 1
        elif status is JobStatus.FAILED:
            self.failed += 1
        elif status is JobStatus.CANCELLED:
            self.cancelled += 1
        else:
            self.retried += 1


@dataclass
class Running:
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


def succeeded(running: Running) -> bool:
    """The handler returned (rather than raised or was cancelled)."""
    task = running.handler_task
    return not task.cancelled() and task.exception() is None


def success(running: Running) -> tuple[Any, Mapping[str, Any] | None, float | None]:
    """(result, event data, tokens used) of a handler that returned."""
    value = running.handler_task.result()
    if isinstance(value, HandlerResult):
        return value.value, value.event_data, value.usage_tokens
    return value, None, None


async def heartbeat(
    db: Database, settings: QueueSettings, running: Running, *, first_delay: float | None = None
) -> None:
    """Extend the job's lease every `heartbeat_seconds` until cancelled; stop the handler when
    the lease is lost or the job's cancellation is requested. A failed beat is retried soon:
    the lease is running out meanwhile."""
    job = running.job
    delay, failures = settings.heartbeat_seconds, 0
    if first_delay is not None:
        delay = first_delay
    while True:
        await asyncio.sleep(delay)
        try:
            async with db.transaction(immediate=True) as conn:
                state = await leases.heartbeat(
                    conn, job.lease, lease_seconds=settings.lease_seconds
                )
        except Exception as exc:
            failures += 1
            log_db_failure(f"heartbeat of job {job.id}", exc)
            delay = min(settings.heartbeat_seconds, db_retry_delay(failures))
            continue
        delay, failures = settings.heartbeat_seconds, 0
        if not state.held:
            log.warning("job %s: lease lost, abandoning the attempt", job.id)
            running.stop(StopReason.LOST)
            return
        if state.cancel_requested and not job.cancel_requested:
            job.cancel_requested = True
            running.stop(StopReason.CANCEL)
