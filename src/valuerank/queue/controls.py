"""Operator controls: pause/resume/cancel a partition, pause/resume the queue, one
organisation's jobs or a provider,
cancel one job, requeue failed jobs.

Pausing only stops claims; running jobs finish. Cancelling a partition cancels its queued
jobs at once and asks its running jobs to stop (they see `cancel_requested` at their next
heartbeat); a cancelled partition is not claimed from until it is resumed, and a job enqueued
into it meanwhile (say by a running job finishing) is cancelled at once (`enqueue.py`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from enum import StrEnum

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from valuerank.db.tables import jobs, queue_controls
from valuerank.errors import NotFoundError
from valuerank.queue.dialect import db_now, upsert
from valuerank.queue.events import (
    PARTITION_SCOPE,
    EventType,
    append_event,
    complete_if_done,
    emit_job_event,
    moved,
)
from valuerank.queue.states import JobStatus, require_transition, status_guard
from valuerank.queue.wakeup import notify_jobs


class ControlScope(StrEnum):
    GLOBAL = "global"
    PARTITION = PARTITION_SCOPE
    PROVIDER = "provider"
    ORG = "org"  # key: the organisation's id; its jobs are not claimed while paused


GLOBAL_KEY = "*"


async def _set_paused(
    conn: AsyncConnection, scope: ControlScope, key: str, org_id: str | None, paused: bool
) -> bool:
    """Set the pause flag; True if it changed."""
    await conn.execute(
        upsert(conn)(queue_controls)
        .values(scope=scope.value, key=key, org_id=org_id)
        .on_conflict_do_nothing(index_elements=[queue_controls.c.scope, queue_controls.c.key])
    )
    changed_if: ColumnElement[bool] = queue_controls.c.paused.is_not(paused)
    if scope is ControlScope.PARTITION and not paused:
        changed_if = changed_if | queue_controls.c.cancel_requested.is_(True)
    stmt = (
        update(queue_controls)
        .where(queue_controls.c.scope == scope.value, queue_controls.c.key == key, changed_if)
        .values(paused=paused, updated_at=db_now(conn.dialect.name))
        .returning(queue_controls.c.key)
    )
    if scope is ControlScope.PARTITION:
        stmt = stmt.where(queue_controls.c.org_id == org_id)
        if not paused:  # resuming also reopens a cancelled partition
            stmt = stmt.values(cancel_requested=False)
    changed = (await conn.execute(stmt)).first() is not None
    if changed and not paused:
        await notify_jobs(conn)  # its jobs can be claimed again: wake idle workers
    return changed


async def pause_partition(
    conn: AsyncConnection, org_id: str, partition: str, *, event: str = EventType.PARTITION_PAUSED
) -> bool:
    """Stop claiming the partition's jobs; True if it was not paused already. `event`: the
    name of the event saying so (its owner's, e.g. `run_paused`)."""
    changed = await _set_paused(conn, ControlScope.PARTITION, partition, org_id, True)
    if changed:
        await append_event(conn, org_id=org_id, partition=partition, type=event)
    return changed


async def resume_partition(
    conn: AsyncConnection, org_id: str, partition: str, *, event: str = EventType.PARTITION_RESUMED
) -> bool:
    """Claim the partition's jobs again (also after a cancel); True if anything changed."""
    changed = await _set_paused(conn, ControlScope.PARTITION, partition, org_id, False)
    if changed:
        await append_event(conn, org_id=org_id, partition=partition, type=event)
    return changed


@dataclass(frozen=True)
class Cancelled:
    cancelled: int  # queued jobs now cancelled
    stopping: int  # running jobs asked to stop


async def cancel_partition(
    conn: AsyncConnection,
    org_id: str,
    partition: str,
    *,
    event: str = EventType.PARTITION_CANCELLED,
) -> Cancelled:
    """Cancel queued jobs now, ask running ones to stop, and claim nothing more from it."""
    dialect = conn.dialect.name
    in_partition = (jobs.c.org_id == org_id, jobs.c.partition == partition)
    cancelled = await conn.execute(
        update(jobs)
        .where(*in_partition, status_guard(jobs, JobStatus.CANCELLED, sources=[JobStatus.QUEUED]))
        .values(status=JobStatus.CANCELLED.value, finished_at=db_now(dialect))
    )
    # Running jobs are locked in id order first, as a worker completing several at once
    # locks them: the two queue up instead of deadlocking.
    running = (
        select(jobs.c.id)
        .where(*in_partition, jobs.c.status == JobStatus.RUNNING.value)
        .order_by(jobs.c.id)
    )
    if dialect == "postgresql":
        running = running.with_for_update()
    stopping = await conn.execute(
        update(jobs)
        .where(
            jobs.c.id.in_(running.scalar_subquery()),
            *in_partition,
            jobs.c.status == JobStatus.RUNNING.value,
        )
        .values(cancel_requested=True)
    )
    await conn.execute(
        upsert(conn)(queue_controls)
        .values(scope=PARTITION_SCOPE, key=partition, org_id=org_id)
        .on_conflict_do_nothing(index_elements=[queue_controls.c.scope, queue_controls.c.key])
    )
    await conn.execute(
        update(queue_controls)
        .where(
            queue_controls.c.scope == PARTITION_SCOPE,
            queue_controls.c.key == partition,
            queue_controls.c.org_id == org_id,
        )
        .values(cancel_requested=True, updated_at=db_now(dialect))
    )
    # A job enqueued while this ran (committed after the first sweep read the partition, and
    # before the flag above was set: enqueue saw it unset) is cancelled now. SKIP LOCKED: a
    # job row locked by a claimer is not waited for while the partition row is held (lock
    # order: job rows first); that job runs, it does not wait forever.
    late = select(jobs.c.id).where(*in_partition, jobs.c.status == JobStatus.QUEUED.value)
    if dialect == "postgresql":
        late = late.with_for_update(skip_locked=True)
    swept = await conn.execute(
        update(jobs)
        .where(
            jobs.c.id.in_(late.scalar_subquery()),
            *in_partition,
            status_guard(jobs, JobStatus.CANCELLED, sources=[JobStatus.QUEUED]),
        )
        .values(status=JobStatus.CANCELLED.value, finished_at=db_now(dialect))
    )
    result = Cancelled(cancelled=cancelled.rowcount + swept.rowcount, stopping=stopping.rowcount)
    await append_event(
        conn,
        org_id=org_id,
        partition=partition,
        type=event,
        data={"cancelled": result.cancelled, "stopping": result.stopping},
        delta=moved(JobStatus.QUEUED, JobStatus.CANCELLED, result.cancelled),
    )
    if result.cancelled:
        await complete_if_done(conn, org_id, partition)
    return result


async def pause_queue(conn: AsyncConnection) -> bool:
    """Stop all claims, everywhere."""
    return await _set_paused(conn, ControlScope.GLOBAL, GLOBAL_KEY, None, True)


async def resume_queue(conn: AsyncConnection) -> bool:
    return await _set_paused(conn, ControlScope.GLOBAL, GLOBAL_KEY, None, False)


async def pause_org(conn: AsyncConnection, org_id: str) -> bool:
    """Stop claiming one organisation's jobs (every partition of it, runs started later
    too); other organisations are not affected. True if it was not paused already."""
    return await _set_paused(conn, ControlScope.ORG, org_id, org_id, True)


async def resume_org(conn: AsyncConnection, org_id: str) -> bool:
    """Claim the organisation's jobs again; True if it was paused."""
    return await _set_paused(conn, ControlScope.ORG, org_id, org_id, False)


async def org_paused(conn: AsyncConnection, org_id: str) -> bool:
    return bool(
        await conn.scalar(
            select(queue_controls.c.paused).where(
                queue_controls.c.scope == ControlScope.ORG.value,
                queue_controls.c.key == org_id,
            )
        )
    )


async def pause_provider(conn: AsyncConnection, provider: str) -> bool:
    """Stop claiming jobs labelled with `provider`; other providers are not affected."""
    return await _set_paused(conn, ControlScope.PROVIDER, provider, None, True)


async def resume_provider(conn: AsyncConnection, provider: str) -> bool:
    return await _set_paused(conn, ControlScope.PROVIDER, provider, None, False)


async def paused(conn: AsyncConnection) -> dict[str, list[str]]:
    """What is paused: {"global": ["*"]?, "partition": […], "provider": […]}."""
    rows = await conn.execute(
        select(queue_controls.c.scope, queue_controls.c.key)
        .where(queue_controls.c.paused.is_(True))
        .order_by(queue_controls.c.scope, queue_controls.c.key)
    )
    found: dict[str, list[str]] = {s.value: [] for s in ControlScope}
    for scope, key in rows:
        found.setdefault(scope, []).append(key)
    return found


async def _status_of(conn: AsyncConnection, org_id: str, job_id: str) -> JobStatus:
    status = await conn.scalar(
        select(jobs.c.status).where(jobs.c.id == job_id, jobs.c.org_id == org_id)
    )
    if status is None:
        raise NotFoundError(f"no job with id {job_id!r}")
    return JobStatus(status)


async def cancel_job(conn: AsyncConnection, org_id: str, job_id: str) -> JobStatus:
    """Cancel a queued job now, or ask a running one to stop. Returns its status after.

    Raises `InvalidTransition` for a finished job.
    """
    dialect = conn.dialect.name
    row = (
        await conn.execute(
            update(jobs)
            .where(
                jobs.c.id == job_id,
                jobs.c.org_id == org_id,
                status_guard(jobs, JobStatus.CANCELLED, sources=[JobStatus.QUEUED]),
            )
            .values(status=JobStatus.CANCELLED.value, finished_at=db_now(dialect))
            .returning(jobs)
        )
    ).first()
    if row is not None:
        await emit_job_event(
            conn, row, EventType.TASK_CANCELLED, delta=moved(JobStatus.QUEUED, JobStatus.CANCELLED)
        )
        await complete_if_done(conn, org_id, row.partition)
        return JobStatus.CANCELLED
    stopping = await conn.execute(
        update(jobs)
        .where(
            jobs.c.id == job_id,
            jobs.c.org_id == org_id,
            jobs.c.status == JobStatus.RUNNING.value,
        )
        .values(cancel_requested=True)
    )
    if stopping.rowcount:
        return JobStatus.RUNNING
    require_transition(await _status_of(conn, org_id, job_id), JobStatus.CANCELLED)
    raise AssertionError("unreachable: the transition check above raises")  # pragma: no cover


async def requeue_failed(
    conn: AsyncConnection,
    org_id: str,
    *,
    job_id: str | None = None,
    partition: str | None = None,
) -> list[str]:
    """`failed → queued` with a fresh attempt budget, one job or every failed job of a
    partition. Returns the ids requeued; a single job that is not failed raises
    `InvalidTransition`."""
    if (job_id is None) == (partition is None):
        raise ValueError("requeue one job (job_id) or one partition (partition)")
    query = update(jobs).where(
        jobs.c.org_id == org_id,
        status_guard(jobs, JobStatus.QUEUED, sources=[JobStatus.FAILED]),
    )
    if job_id is not None:
        query = query.where(jobs.c.id == job_id)
    else:
        query = query.where(jobs.c.partition == partition)
    rows = (
        await conn.execute(
            query.values(
                status=JobStatus.QUEUED.value,
                attempts=0,
                run_at=db_now(conn.dialect.name),
                finished_at=None,
                lease_token=None,
                lease_expires_at=None,
                cancel_requested=False,
            ).returning(jobs)
        )
    ).all()
    if job_id is not None and not rows:
        require_transition(await _status_of(conn, org_id, job_id), JobStatus.QUEUED)
    requeued = Counter(row.partition for row in rows)
    for row in sorted(rows, key=lambda r: (r.partition, r.id)):
        # The partition's first event counts all its requeued jobs (they moved together).
        n = requeued.pop(row.partition, 0)
        await emit_job_event(
            conn,
            row,
            EventType.TASK_REQUEUED,
            delta=moved(JobStatus.FAILED, JobStatus.QUEUED, n),
        )
    if rows:
        await notify_jobs(conn, {r.kind for r in rows})
    return [r.id for r in rows]
