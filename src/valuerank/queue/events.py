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

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import String, bindparam, func, insert, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import events, jobs, queue_controls, webhooks
from valuerank.queue.dialect import as_utc, db_now
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


# The per-event statements are built once per dialect with bound parameters: building (and
# computing the cache key of) a fresh statement per event cost more than running it.


@functools.cache
def _next_seq_statement(dialect: str) -> Any:
    hooked = (
        select(webhooks.c.id)
        .where(webhooks.c.org_id == bindparam("hook_org_id"), webhooks.c.active.is_(True))
        .exists()
    )
    ins = postgresql.insert if dialect == "postgresql" else sqlite.insert
    return (
        ins(queue_controls)
        .values(
            scope=PARTITION_SCOPE,
            key=bindparam("partition", type_=queue_controls.c.key.type),
            org_id=bindparam("org_id", type_=queue_controls.c.org_id.type),
            last_seq=1,
        )
        .on_conflict_do_update(
            index_elements=[queue_controls.c.scope, queue_controls.c.key],
            set_={"last_seq": queue_controls.c.last_seq + 1},
        )
        .returning(queue_controls.c.last_seq, hooked)
    )


@functools.cache
def _insert_statement(dialect: str) -> Any:
    stmt = insert(events).values(
        partition=bindparam("partition", type_=events.c.partition.type),
        seq=bindparam("seq", type_=events.c.seq.type),
        org_id=bindparam("org_id", type_=events.c.org_id.type),
        type=bindparam("type", type_=events.c.type.type),
        data=bindparam("data", type_=events.c.data.type),
        created_at=db_now(dialect),
    )
    if dialect == "postgresql":
        # NOTIFY in the same round trip as the insert (delivered at commit either way).
        notify = func.pg_notify(NOTIFY_CHANNEL, bindparam("channel_payload", type_=String()))
        stmt = stmt.returning(notify.label("notified"))
    return stmt


_PROGRESS = (
    select(jobs.c.status, func.count())
    .where(jobs.c.partition == bindparam("partition", type_=jobs.c.partition.type))
    .group_by(jobs.c.status)
)


async def _next_seq(conn: AsyncConnection, org_id: str, partition: str) -> tuple[int, bool]:
    """Bump the partition's sequence (locking its row); also says, in the same round trip,
    whether the organisation has an active webhook (else the outbox SELECT is skipped)."""
    stmt = _next_seq_statement(conn.dialect.name)
    params = {"partition": partition, "org_id": org_id, "hook_org_id": org_id}
    seq, has_hooks = (await conn.execute(stmt, params)).one()
    return int(seq), bool(has_hooks)


async def append_event(
    conn: AsyncConnection,
    *,
    org_id: str,
    partition: str,
    type: EventType,
    data: Mapping[str, Any] | None = None,
) -> int:
    """Append one event; returns its sequence number. Locks the partition's control row."""
    seq, hooked = await _next_seq(conn, org_id, partition)
    await _insert(conn, org_id, partition, seq, type, dict(data or {}), hooked=hooked)
    return seq


async def _insert(
    conn: AsyncConnection,
    org_id: str,
    partition: str,
    seq: int,
    type: EventType,
    data: dict[str, Any],
    *,
    hooked: bool = True,
) -> None:
    dialect = conn.dialect.name
    params: dict[str, Any] = {
        "partition": partition,
        "seq": seq,
        "org_id": org_id,
        "type": type.value,
        "data": data,
    }
    if dialect == "postgresql":
        params["channel_payload"] = partition
    await conn.execute(_insert_statement(dialect), params)
    # Webhook notifications of this event, in the same transaction (see queue/outbox.py);
    # `hooked` False (no active webhook, read by `_next_seq`) skips their SELECT.
    if hooked:
        payload = {"partition": partition, "seq": seq, "type": type.value, "data": data}
        await enqueue_notifications(conn, org_id, type.value, payload)


async def partition_progress(conn: AsyncConnection, partition: str) -> Progress:
    rows = await conn.execute(_PROGRESS, {"partition": partition})
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
    seq, _ = await emit_job_event_with_progress(conn, row, type, extra)
    return seq


async def emit_job_event_with_progress(
    conn: AsyncConnection, row: Any, type: EventType, extra: Mapping[str, Any] | None = None
) -> tuple[int, Progress | None]:
    """`emit_job_event`, also returning the progress it counted (None if the type has none),
    so that a following `complete_if_done` in the same transaction need not count again."""
    seq, hooked = await _next_seq(conn, row.org_id, row.partition)
    data = job_data(row, extra)
    progress = None
    if type in _WITH_PROGRESS:
        progress = await partition_progress(conn, row.partition)
        data.update(progress.to_dict())
    await _insert(conn, row.org_id, row.partition, seq, type, data, hooked=hooked)
    return seq, progress


async def complete_if_done(
    conn: AsyncConnection, org_id: str, partition: str, *, progress: Progress | None = None
) -> bool:
    """Emit `partition_complete` when nothing is queued or running in the partition any more.

    Call after this transaction has moved a job of the partition out of `queued`/`running`
    (and so has locked the partition row), never speculatively. `progress`: the partition's
    counts taken after that, in this transaction, with no job changed since (saves a count).
    """
    if progress is None:
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
