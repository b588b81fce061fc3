"""Append-only events per partition, numbered 1, 2, 3… and read with a cursor.

An event is written in the transaction that makes the change it reports, so a reader never
sees an event for a change that was rolled back, nor a change without its event. The
sequence number lives in the partition's `queue_controls` row: bumping it locks that row,
which serialises the partition's events (no gaps, no duplicates) and makes "is the partition
complete?" a question only one transaction at a time can ask. On PostgreSQL the transaction
also sends `NOTIFY valuerank_events, '<partition>'` (delivered at commit) so listeners wake
up; SQLite readers poll. Polling `events_after` is the truth either way.

Lock order, to stay deadlock-free on PostgreSQL: job rows, then slot rows, then partition rows
(sorted). Emit events last in a transaction, partitions in sorted order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import func, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import events, jobs, queue_controls
from valuerank.queue.dialect import as_utc, db_now, upsert
from valuerank.queue.outbox import enqueue_notifications
from valuerank.queue.states import JobStatus

NOTIFY_CHANNEL = "valuerank_events"
PARTITION_SCOPE = "partition"


class EventType(StrEnum):
    TASK_STARTED = "task_started"
    TASK_COMPLETE = "task_complete"
    TASK_FAILED = "task_failed"  # final: no attempt left, or a permanent error
    TASK_RETRYING = "task_retrying"  # back to queued after an error or a lost lease
    TASK_CANCELLED = "task_cancelled"
    TASK_REQUEUED = "task_requeued"  # a failed job sent back by hand
    PARTITION_PAUSED = "partition_paused"
    PARTITION_RESUMED = "partition_resumed"
    PARTITION_CANCELLED = "partition_cancelled"
    PARTITION_COMPLETE = "partition_complete"  # nothing queued or running any more


_WITH_PROGRESS = frozenset(
    {
        EventType.TASK_COMPLETE,
        EventType.TASK_FAILED,
        EventType.TASK_RETRYING,
        EventType.TASK_CANCELLED,
    }
)


@dataclass(frozen=True)
class Event:
    partition: str
    seq: int
    org_id: str
    type: EventType
    data: dict[str, Any]
    created_at: datetime


@dataclass(frozen=True)
class Progress:
    """Job counts of one partition by status."""

    counts: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def done(self) -> int:
        return self.total - self.active

    @property
    def active(self) -> int:
        return self.counts.get(JobStatus.QUEUED, 0) + self.counts.get(JobStatus.RUNNING, 0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "progress": f"{self.done}/{self.total}",
            "done": self.done,
            "total": self.total,
            "counts": {s.value: self.counts.get(s.value, 0) for s in JobStatus},
        }


async def _next_seq(conn: AsyncConnection, org_id: str, partition: str) -> int:
    stmt = (
        upsert(conn)(queue_controls)
        .values(scope=PARTITION_SCOPE, key=partition, org_id=org_id, last_seq=1)
        .on_conflict_do_update(
            index_elements=[queue_controls.c.scope, queue_controls.c.key],
            set_={"last_seq": queue_controls.c.last_seq + 1},
        )
        .returning(queue_controls.c.last_seq)
    )
    return int((await conn.execute(stmt)).scalar_one())


async def append_event(
    conn: AsyncConnection,
    *,
    org_id: str,
    partition: str,
    type: EventType,
    data: Mapping[str, Any] | None = None,
) -> int:
    """Append one event; returns its sequence number. Locks the partition's control row."""
    seq = await _next_seq(conn, org_id, partition)
    await _insert(conn, org_id, partition, seq, type, dict(data or {}))
    return seq


async def _insert(
    conn: AsyncConnection,
    org_id: str,
    partition: str,
    seq: int,
    type: EventType,
    data: dict[str, Any],
) -> None:
    await conn.execute(
        insert(events).values(
            partition=partition,
            seq=seq,
            org_id=org_id,
            type=type.value,
            data=data,
            created_at=db_now(conn.dialect.name),
        )
    )
    # Webhook notifications of this event, in the same transaction (see queue/outbox.py).
    payload = {"partition": partition, "seq": seq, "type": type.value, "data": data}
    await enqueue_notifications(conn, org_id, type.value, payload)
    if conn.dialect.name == "postgresql":
        await conn.execute(select(func.pg_notify(NOTIFY_CHANNEL, partition)))


async def partition_progress(conn: AsyncConnection, partition: str) -> Progress:
    rows = await conn.execute(
        select(jobs.c.status, func.count())
        .where(jobs.c.partition == partition)
        .group_by(jobs.c.status)
    )
    return Progress({status: int(n) for status, n in rows})


def job_data(row: Any, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What an event says about a job (a row or a `Job`)."""
    data: dict[str, Any] = {
        "job_id": row.id,
        "kind": row.kind,
        "item_key": row.item_key,
        "attempt": row.attempts,
        "provider": row.provider,
        "model": row.model,
    }
    data.update({k: v for k, v in (extra or {}).items() if v is not None})
    return data


async def emit_job_event(
    conn: AsyncConnection, row: Any, type: EventType, extra: Mapping[str, Any] | None = None
) -> int:
    """An event about one job. Events that end the job's attempt carry the partition's progress,
    counted after the partition row is locked so concurrent finishers see each other."""
    seq = await _next_seq(conn, row.org_id, row.partition)
    data = job_data(row, extra)
    if type in _WITH_PROGRESS:
        data.update((await partition_progress(conn, row.partition)).to_dict())
    await _insert(conn, row.org_id, row.partition, seq, type, data)
    return seq


async def complete_if_done(conn: AsyncConnection, org_id: str, partition: str) -> bool:
    """Emit `partition_complete` when nothing is queued or running in the partition any more.

    Call after this transaction has moved a job of the partition out of `queued`/`running`
    (and so has locked the partition row), never speculatively.
    """
    progress = await partition_progress(conn, partition)
    if progress.active:
        return False
    await append_event(
        conn,
        org_id=org_id,
        partition=partition,
        type=EventType.PARTITION_COMPLETE,
        data=progress.to_dict(),
    )
    return True


async def events_after(
    conn: AsyncConnection,
    partition: str,
    after_seq: int = 0,
    limit: int = 100,
    *,
    org_id: str | None = None,
) -> list[Event]:
    """The events of a partition with seq > `after_seq`, oldest first: a resumable cursor."""
    query = select(events).where(events.c.partition == partition, events.c.seq > after_seq)
    if org_id is not None:
        query = query.where(events.c.org_id == org_id)
    rows = await conn.execute(query.order_by(events.c.seq).limit(limit))
    return [
        Event(
            partition=r.partition,
            seq=r.seq,
            org_id=r.org_id,
            type=EventType(r.type),
            data=r.data,
            created_at=as_utc(r.created_at),
        )
        for r in rows
    ]


async def last_seq(conn: AsyncConnection, partition: str) -> int:
    """The newest sequence number of a partition (0 before its first event)."""
    value = await conn.scalar(
        select(queue_controls.c.last_seq).where(
            queue_controls.c.scope == PARTITION_SCOPE, queue_controls.c.key == partition
        )
    )
    return int(value or 0)
