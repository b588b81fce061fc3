"""Append-only events per partition, numbered 1, 2, 3… and read with a cursor.

An event is written in the transaction that makes the change it reports, so a reader never
sees an event for a change that was rolled back, nor a change without its event. The
sequence number lives in the partition's `queue_controls` row: bumping it locks that row,
which serialises the partition's events (no gaps, no duplicates) and makes "is the partition
complete?" a question only one transaction at a time can ask. On PostgreSQL the transaction
also sends `NOTIFY valuerank_events, '<partition>'` (delivered at commit) so listeners wake
up; SQLite readers poll. Polling `events_after` is the truth either way.

Progress: the same row counts the partition's jobs per status (queue/counters.py); the bump
that numbers an event also applies the change of the move it reports and returns the counts.

Event types: the queue's own are `EventType`; other packages may append events of their own
types (plain strings, e.g. `multi_model.validation_added`) to partitions of their own, and
read them with their own reader (`events_after` gives a type it does not know as a string).
The package that owns a partition may name the event that says it is finished, and shape
what webhooks get of its events, through the hooks in effect (queue/hooks.py: a run's
partition ends with `run_complete`); the default is `partition_complete`.

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

from sqlalchemy import String, bindparam, func, insert, select, text
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import events, queue_controls
from valuerank.queue.counters import (
    COUNTER_COLUMNS,
    COUNTS_ACTIVE,
    PARTITION_SCOPE,
    Delta,
    Progress,
    add_counts,
    checked,
    count_partition,
    delta_params,
    moved,
    partition_progress,
    recount_partition,
)
from valuerank.queue.dialect import as_utc, db_now
from valuerank.queue.hooks import hooks_in_use

# The counters' names, long imported from here (queue/counters.py owns them now).
__all__ = [
    "COUNTER_COLUMNS",
    "COUNTS_ACTIVE",
    "NOTIFY_CHANNEL",
    "PARTITION_SCOPE",
    "Delta",
    "Event",
    "EventType",
    "Progress",
    "add_counts",
    "append_event",
    "checked",
    "complete_if_done",
    "count_partition",
    "emit_job_event",
    "emit_job_event_with_progress",
    "emit_job_events",
    "events_after",
    "job_data",
    "last_seq",
    "moved",
    "notify_webhooks",
    "partition_progress",
    "recount_partition",
    "write_event",
]

NOTIFY_CHANNEL = "valuerank_events"


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
    # Maintenance closed a partition (a run) left open with no job queued or running; the
    # data says the status it was moved to and why.
    PARTITION_REAPED = "partition_reaped"


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
    type: EventType | str  # a plain string: a type of another package (`run_complete`, …)
    data: dict[str, Any]
    created_at: datetime


# The per-event statements are built once with bound parameters: building (and compiling,
# as INSERT … ON CONFLICT is never cached by SQLAlchemy) a statement per event cost more than
# running it. The SQL is the same on both dialects.

_COUNTS = ", ".join(COUNTER_COLUMNS.values())
_NEXT_SEQ = text(
    "INSERT INTO queue_controls (scope, key, org_id, last_seq, "
    + _COUNTS
    + ") VALUES ('partition', :partition, :org_id, :n, "
    + ", ".join(f":{c}" for c in COUNTER_COLUMNS.values())
    + ") ON CONFLICT (scope, key) DO UPDATE SET last_seq = queue_controls.last_seq + :n, "
    + ", ".join(f"{c} = queue_controls.{c} + excluded.{c}" for c in COUNTER_COLUMNS.values())
    + " RETURNING last_seq, "
    + _COUNTS
    + ", EXISTS (SELECT 1 FROM webhooks WHERE webhooks.org_id = :org_id"
    " AND webhooks.active = true) AS hooked"
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


async def _next_seq(
    conn: AsyncConnection, org_id: str, partition: str, delta: Delta | None = None, n: int = 1
) -> tuple[int, bool, Progress]:
    """Take the partition's next `n` sequence numbers (locking its row; returns the last) and
    add `delta` to its counters; also says, in the same round trip, whether the organisation
    has an active webhook (else the outbox SELECT is skipped), and returns the counters after
    the change."""
    params = {"partition": partition, "org_id": org_id, "n": n, **delta_params(delta)}
    row = (await conn.execute(_NEXT_SEQ, params)).one()
    progress = await checked(conn, org_id, partition, Progress.from_row(row))
    return int(row.last_seq), bool(row.hooked), progress


async def append_event(
    conn: AsyncConnection,
    *,
    org_id: str,
    partition: str,
    type: EventType | str,
    data: Mapping[str, Any] | None = None,
    delta: Delta | None = None,
) -> int:
    """Append one event; returns its sequence number. Locks the partition's control row.

    `delta`: how the change this event reports moved the partition's jobs (see the module)."""
    seq, hooked, _ = await _next_seq(conn, org_id, partition, delta)
    await _insert(conn, org_id, partition, seq, type, dict(data or {}), hooked=hooked)
    return seq


async def _insert(
    conn: AsyncConnection,
    org_id: str,
    partition: str,
    seq: int,
    type: EventType | str,
    data: dict[str, Any],
    *,
    hooked: bool = True,
) -> None:
    await _insert_many(conn, org_id, partition, type, [(seq, data)], hooked=hooked)


async def _insert_many(
    conn: AsyncConnection,
    org_id: str,
    partition: str,
    type: EventType | str,
    written: list[tuple[int, dict[str, Any]]],
    *,
    hooked: bool = True,
) -> None:
    """Insert events of one partition and type, `(seq, data)` each, in one statement; then
    their webhook notifications (unless `hooked` is False: no active webhook)."""
    dialect = conn.dialect.name
    notify = {"channel_payload": partition} if dialect == "postgresql" else {}
    params = [
        {
            "partition": partition,
            "seq": seq,
            "org_id": org_id,
            "type": str(type),
            "data": data,
            **notify,
        }
        for seq, data in written
    ]
    await conn.execute(_insert_statement(dialect), params)
    if hooked:
        for seq, data in written:
            await notify_webhooks(conn, org_id, partition, seq, type, data)


async def emit_job_events(
    conn: AsyncConnection,
    rows: list[Any],
    type: EventType,
    extra: Mapping[str, Any] | None = None,
    *,
    delta: Delta | None = None,
) -> None:
    """`emit_job_event` for several jobs of one partition at once, in the order given: one
    bump of the sequence (by their number) and one INSERT for all their events. Events that
    carry progress all show the counts after `delta` (the counters are read once)."""
    if not rows:
        return
    first = rows[0]
    last, hooked, counts = await _next_seq(conn, first.org_id, first.partition, delta, len(rows))
    written: list[tuple[int, dict[str, Any]]] = []
    for seq, row in enumerate(rows, start=last - len(rows) + 1):
        data = job_data(row, extra)
        if type in _WITH_PROGRESS:
            data.update(counts.to_dict())
        written.append((seq, data))
    await _insert_many(conn, first.org_id, first.partition, type, written, hooked=hooked)


async def write_event(
    conn: AsyncConnection,
    org_id: str,
    partition: str,
    seq: int,
    type: EventType | str,
    data: Mapping[str, Any],
    *,
    hooked: bool = True,
) -> None:
    """Insert an event whose sequence number the caller took (with its webhook notifications
    unless `hooked` is False: the organisation has no active webhook)."""
    await _insert(conn, org_id, partition, seq, type, dict(data), hooked=hooked)


async def notify_webhooks(
    conn: AsyncConnection,
    org_id: str,
    partition: str,
    seq: int,
    type: EventType | str,
    data: Mapping[str, Any],
) -> None:
    """Webhook notifications of an event, in the same transaction (see queue/outbox/)."""
    # Here, not with the module: the outbox brings the webhooks' signing (cryptography) and
    # HTTP, which a command that only reads a run's events never needs.
    from valuerank.queue.outbox.notify import enqueue_notifications

    hooks = hooks_in_use()
    topic, published = await hooks.publish(conn, org_id, partition, str(type), dict(data))
    payload = {"partition": partition, "seq": seq, "type": topic, "data": published}
    aliases = hooks.aliases(topic)
    await enqueue_notifications(conn, org_id, topic, payload, aliases=aliases)


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
    conn: AsyncConnection,
    row: Any,
    type: EventType,
    extra: Mapping[str, Any] | None = None,
    *,
    delta: Delta | None = None,
) -> int:
    """An event about one job. Events that end the job's attempt carry the partition's progress,
    read after the partition row is locked so concurrent finishers see each other.

    `delta`: the change of the partition's counts not yet added by an earlier event of this
    transaction (normally this job's move; see the module)."""
    seq, _ = await emit_job_event_with_progress(conn, row, type, extra, delta=delta)
    return seq


async def emit_job_event_with_progress(
    conn: AsyncConnection,
    row: Any,
    type: EventType,
    extra: Mapping[str, Any] | None = None,
    *,
    delta: Delta | None = None,
) -> tuple[int, Progress | None]:
    """`emit_job_event`, also returning the progress it read (None if the type has none),
    so that a following `complete_if_done` in the same transaction need not read it again."""
    seq, hooked, counts = await _next_seq(conn, row.org_id, row.partition, delta)
    data = job_data(row, extra)
    progress = None
    if type in _WITH_PROGRESS:
        progress = counts
        data.update(progress.to_dict())
    await _insert(conn, row.org_id, row.partition, seq, type, data, hooked=hooked)
    return seq, progress


async def complete_if_done(
    conn: AsyncConnection, org_id: str, partition: str, *, progress: Progress | None = None
) -> bool:
    """Emit the partition's completion event (`partition_complete`, or the name its owner
    gives through the hooks in effect: see queue/hooks.py) when nothing is queued or running
    in it any more.

    Call after this transaction has moved a job of the partition out of `queued`/`running`
    (and so has locked the partition row), never speculatively. `progress`: the partition's
    counters read after that, in this transaction, with no job changed since (saves a read).
    When the counters say the partition is finished, the jobs are counted for real (once per
    completion) before anything is emitted: jobs moved behind the queue's back can make the
    counters wrong, never the event.
    """
    if progress is None:
        progress = await partition_progress(conn, partition)
    if progress.active:
        return False
    progress, _ = await recount_partition(conn, org_id, partition)
    if progress.active:
        return False
    hooks = hooks_in_use()
    if await hooks.kept_open(conn, org_id, partition):  # its owner gave it more work
        return False
    name, extra = await hooks.completion(conn, org_id, partition)
    await append_event(
        conn,
        org_id=org_id,
        partition=partition,
        type=name,
        data={**progress.to_dict(), **extra},
    )
    return True


def _event_type(value: str) -> EventType | str:
    try:
        return EventType(value)
    except ValueError:
        return value


async def events_after(
    conn: AsyncConnection,
    partition: str,
    after_seq: int = 0,
    limit: int = 100,
    *,
    org_id: str | None = None,
) -> list[Event]:
    """The events of a partition with seq > `after_seq`, oldest first: a resumable cursor.
    A type the queue does not define (its owner's completion, say) comes as a plain string."""
    query = select(events).where(events.c.partition == partition, events.c.seq > after_seq)
    if org_id is not None:
        query = query.where(events.c.org_id == org_id)
    rows = await conn.execute(query.order_by(events.c.seq).limit(limit))
    return [
        Event(
            partition=r.partition,
            seq=r.seq,
            org_id=r.org_id,
            type=_event_type(r.type),
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
