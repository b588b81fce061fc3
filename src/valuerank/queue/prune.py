"""What maintenance deletes, a bounded batch at a time: finished jobs (with their errors and
their partitions' counters), events past their retention, and rows of other tables by age.

Each function deletes at most `batch` rows, so that one maintenance pass stays one short
transaction; callers run passes until nothing is left.

A package that owns partitions may keep what it needs of their pruned jobs (the runs package
keeps a run's counts and failures): the queue knows no runs, so it hands the deleted rows to
the pruned-job observers of the hooks in effect (queue/hooks.py).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from sqlalchemy import delete, exists, select, tuple_
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import events, job_errors, jobs, queue_controls
from valuerank.queue.counters import COUNTS_ACTIVE, PARTITION_SCOPE, add_counts
from valuerank.queue.dialect import db_now_plus
from valuerank.queue.hooks import hooks_in_use
from valuerank.queue.states import JobStatus

FINISHED = (JobStatus.SUCCEEDED.value, JobStatus.FAILED.value, JobStatus.CANCELLED.value)


async def delete_batch(conn: AsyncConnection, table: Any, where: list[Any], batch: int) -> int:
    """Delete up to `batch` rows of `table` (keyed by `id`) matching `where`."""
    ids = select(table.c.id).where(*where).order_by(table.c.id).limit(batch)
    result = await conn.execute(delete(table).where(table.c.id.in_(ids.scalar_subquery())))
    return int(result.rowcount or 0)


async def prune_jobs(conn: AsyncConnection, *, older_than_seconds: float, batch: int) -> int:
    """Delete up to `batch` finished jobs older than the cutoff, their errors first; the
    observers get the deleted rows in the same transaction."""
    cutoff = db_now_plus(conn.dialect.name, -older_than_seconds)
    old = (
        select(jobs.c.id)
        .where(jobs.c.status.in_(FINISHED), jobs.c.finished_at < cutoff)
        .order_by(jobs.c.id)
        .limit(batch)
    )
    ids = list((await conn.execute(old)).scalars())
    if not ids:
        return 0
    await conn.execute(delete(job_errors).where(job_errors.c.job_id.in_(ids)))
    gone = (
        await conn.execute(
            delete(jobs).where(jobs.c.id.in_(ids), jobs.c.status.in_(FINISHED)).returning(*jobs.c)
        )
    ).all()
    # The rows the delete returns, not the ones selected above: a job requeued in between
    # is not deleted, so no observer may count it as pruned. Before the partitions' rows
    # are locked, to keep the lock order (job rows first, partition rows last).
    await hooks_in_use().pruned(conn, gone)
    # The partitions' job counters count what is stored (see queue/events.py).
    by_partition: dict[str, Counter[JobStatus]] = {}
    for row in gone:
        by_partition.setdefault(row.partition, Counter())[JobStatus(row.status)] -= 1
    for partition in sorted(by_partition):
        await add_counts(conn, partition, by_partition[partition])
    return len(gone)


async def prune_events(conn: AsyncConnection, *, older_than_seconds: float, batch: int) -> int:
    """Delete up to `batch` events older than the cutoff, oldest first, of partitions with no
    job queued or running, except each partition's last event."""
    cutoff = db_now_plus(conn.dialect.name, -older_than_seconds)
    live = exists().where(
        queue_controls.c.scope == PARTITION_SCOPE,
        queue_controls.c.key == events.c.partition,
        COUNTS_ACTIVE,
    )
    later = events.alias("later")
    not_last = exists().where(later.c.partition == events.c.partition, later.c.seq > events.c.seq)
    old = (
        select(events.c.partition, events.c.seq)
        .where(events.c.created_at < cutoff, ~live, not_last)
        .order_by(events.c.created_at, events.c.partition, events.c.seq)
        .limit(batch)
    )
    keys = (await conn.execute(old)).all()
    if not keys:
        return 0
    result = await conn.execute(
        delete(events).where(tuple_(events.c.partition, events.c.seq).in_([tuple(k) for k in keys]))
    )
    return int(result.rowcount or 0)
