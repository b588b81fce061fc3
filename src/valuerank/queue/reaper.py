"""The reaper: what happens to jobs whose worker vanished or which ran too long.

An expired lease means the worker died or stalled: the attempt counts. The job goes back to
`queued`, or to `failed` (dead letter) when its attempts are spent, or to `cancelled` when
its cancellation was requested. A job running longer than the max runtime fails with a
`timeout` error; its worker, if alive, learns at its next heartbeat that the lease is gone.
Each move releases the attempt's slots and writes its error and event in the same
transaction. Safe to run from every worker at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import jobs
from valuerank.queue.dialect import db_now, db_now_plus
from valuerank.queue.errors import ErrorCategory, error_text, record_error
from valuerank.queue.events import EventType, complete_if_done, emit_job_event
from valuerank.queue.job import LEFT_RUNNING_COLUMNS
from valuerank.queue.settings import QueueSettings
from valuerank.queue.slots import release_slots
from valuerank.queue.states import JobStatus, status_guard

LEASE_EXPIRED_MESSAGE = "lease expired: the worker stopped heartbeating"


@dataclass
class Reaped:
    requeued: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)
    timed_out: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.requeued) + len(self.failed) + len(self.cancelled) + len(self.timed_out)


async def reap(conn: AsyncConnection, settings: QueueSettings) -> Reaped:
    """Move every expired or overdue running job on; one transaction (the caller's)."""
    dialect = conn.dialect.name
    now = db_now(dialect)
    running = jobs.c.status == JobStatus.RUNNING.value
    expired = (running, jobs.c.lease_expires_at < now)
    off_lease = {"lease_token": None, "lease_expires_at": None}
    moved: list[tuple[Any, EventType, ErrorCategory | None, str | None]] = []
    result = Reaped()

    async def move(where: tuple[Any, ...], target: JobStatus, values: dict[str, Any]) -> list[Any]:
        stmt = (
            update(jobs)
            .where(*where, status_guard(jobs, target, sources=[JobStatus.RUNNING]))
            .values(status=target.value, **off_lease, **values)
            .returning(*LEFT_RUNNING_COLUMNS)
        )
        return list((await conn.execute(stmt)).all())

    lost = LEASE_EXPIRED_MESSAGE
    requeued = error_text(ErrorCategory.LEASE_EXPIRED, lost)
    for row in await move(
        (*expired, jobs.c.cancel_requested.is_(True)),
        JobStatus.CANCELLED,
        {"finished_at": now},
    ):
        result.cancelled.append(row.id)
        moved.append((row, EventType.TASK_CANCELLED, None, None))
    for row in await move(
        (*expired, jobs.c.attempts >= jobs.c.max_attempts),
        JobStatus.FAILED,
        {"finished_at": now, "last_error": error_text(ErrorCategory.LEASE_EXPIRED, lost)},
    ):
        result.failed.append(row.id)
        moved.append((row, EventType.TASK_FAILED, ErrorCategory.LEASE_EXPIRED, lost))
    for row in await move(expired, JobStatus.QUEUED, {"run_at": now, "last_error": requeued}):
        result.requeued.append(row.id)
        moved.append((row, EventType.TASK_RETRYING, ErrorCategory.LEASE_EXPIRED, lost))
    if settings.max_runtime_seconds is not None:
        overdue = f"ran longer than the max runtime of {settings.max_runtime_seconds:g} s"
        for row in await move(
            (running, jobs.c.started_at < db_now_plus(dialect, -settings.max_runtime_seconds)),
            JobStatus.FAILED,
            {"finished_at": now, "last_error": error_text(ErrorCategory.TIMEOUT, overdue)},
        ):
            result.timed_out.append(row.id)
            moved.append((row, EventType.TASK_FAILED, ErrorCategory.TIMEOUT, overdue))

    await release_slots(conn, [k for row, *_ in moved for k in row.slot_keys or []])
    # Each partition's counters take all its moves with its first event (as the jobs moved
    # in the statements above), so every event shows the counts after the whole reaping.
    deltas: dict[str, dict[JobStatus, int]] = {}
    for row, *_ in moved:
        delta = deltas.setdefault(row.partition, {})
        delta[JobStatus.RUNNING] = delta.get(JobStatus.RUNNING, 0) - 1
        delta[JobStatus(row.status)] = delta.get(JobStatus(row.status), 0) + 1
    for row, event, category, message in sorted(moved, key=lambda m: (m[0].partition, m[0].id)):
        if category is not None and message is not None:
            await record_error(
                conn,
                job_id=row.id,
                org_id=row.org_id,
                attempt=row.attempts,
                category=category,
                error=message,
            )
        extra = {
            "reason": category.value if category else "cancelled",
            "error": error_text(category, message) if category and message else None,
        }
        await emit_job_event(conn, row, event, extra, delta=deltas.pop(row.partition, None))
    finished = {
        (row.org_id, row.partition)
        for row, event, *_ in moved
        if event is not EventType.TASK_RETRYING
    }
    for org_id, partition in sorted(finished, key=lambda p: p[1]):
        await complete_if_done(conn, org_id, partition)
    return result
