"""A partition as its owner sees it: the queue's one door for the packages that keep their
work in partitions (a run's jobs, its analyses, an organisation's validations).

Nothing outside `queue/` reads or writes the queue's tables (`jobs`, `job_errors`, `events`,
`queue_controls`; tests/queue/test_partitions_api.py holds the code to it): the domain asks
here instead. Two kinds of answer:

- *Reads and writes run here*: whether jobs are live or running, counts, a page of jobs,
  events counted or found, and deleting jobs or whole partitions (the owner's data is the
  owner's to delete; the queue deletes what it keeps about the partition: its jobs with
  their errors, its events and its control row, and releases nothing a running job holds,
  so a partition with a running job is refused).
- *Statements to compose* (`job_counts`, `job_rows`, `counter_rows`, `live_jobs_exist`):
  for a read that must see the queue's rows and the owner's in one statement, hence one
  snapshot (a run's progress counts its live jobs and the ones maintenance pruned into the
  run's row: a job pruned between two statements would be counted twice or not at all).
  The owner selects from them as subqueries, by the column names given here.

Pause, resume and cancel of a partition are `valuerank.queue.controls`; its events one by
one and its counters are `valuerank.queue.events`.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import (
    ColumnElement,
    CompoundSelect,
    Exists,
    Select,
    String,
    bindparam,
    delete,
    exists,
    func,
    literal,
    literal_column,
    or_,
    select,
    union_all,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import events, job_errors, jobs, queue_controls
from valuerank.errors import ConflictError
from valuerank.queue.dialect import as_utc
from valuerank.queue.events import COUNTER_COLUMNS, PARTITION_SCOPE, Event, EventType, add_counts
from valuerank.queue.job import Job, job_from_row
from valuerank.queue.states import JobStatus

LIVE = (JobStatus.QUEUED, JobStatus.RUNNING)
FINISHED = (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)

JobField = Literal[
    "id",
    "partition",
    "item_key",
    "kind",
    "payload",
    "status",
    "model",
    "provider",
    "attempts",
    "max_attempts",
    "last_error",
    "created_at",
    "finished_at",
]


def _where(
    partitions: str | Sequence[str],
    *,
    org_id: str | None = None,
    kinds: Sequence[str] | None = None,
    other_than_kind: str | None = None,
    statuses: Sequence[JobStatus] | None = None,
    models: Sequence[str] | None = None,
) -> list[ColumnElement[bool]]:
    where: list[ColumnElement[bool]] = []
    if isinstance(partitions, str):
        where.append(jobs.c.partition == partitions)
    else:
        where.append(jobs.c.partition.in_(list(partitions)))
    if org_id is not None:
        where.append(jobs.c.org_id == org_id)
    if kinds is not None:
        where.append(jobs.c.kind == kinds[0] if len(kinds) == 1 else jobs.c.kind.in_(kinds))
    if other_than_kind is not None:
        # Two ranges rather than `!=`, so that the (partition, kind) order of the unique
        # index serves it without reading the kind left out (a run's many probes).
        where.append(or_(jobs.c.kind < other_than_kind, jobs.c.kind > other_than_kind))
    if statuses is not None:
        values = [s.value for s in statuses]
        where.append(jobs.c.status == values[0] if len(values) == 1 else jobs.c.status.in_(values))
    if models is not None:
        where.append(jobs.c.model.in_(list(models)))
    return where


# -- statements to compose --------------------------------------------------------------------


def job_counts(
    partitions: str | Sequence[str],
    *,
    by: Sequence[JobField] = ("status",),
    org_id: str | None = None,
    kinds: Sequence[str] | None = None,
    other_than_kind: str | None = None,
    statuses: Sequence[JobStatus] | None = None,
) -> Select[Any]:
    """The partitions' jobs counted one by one, grouped `by` those columns (in that order),
    the count last, as `n`. With `by=()`, one row: how many."""
    grouped = [jobs.c[name] for name in by]
    query = select(*grouped, func.count().label("n")).where(
        *_where(
            partitions,
            org_id=org_id,
            kinds=kinds,
            other_than_kind=other_than_kind,
            statuses=statuses,
        )
    )
    return query.group_by(*grouped) if grouped else query


def job_rows(
    partitions: str | Sequence[str],
    columns: Sequence[JobField] | None = None,
    *,
    org_id: str | None = None,
    kinds: Sequence[str] | None = None,
    statuses: Sequence[JobStatus] | None = None,
    not_status: JobStatus | None = None,
    item_key_prefix: str | None = None,
) -> Select[Any]:
    """The partitions' jobs, `columns` of them (every column if None), in no order: the
    caller orders and limits by `selected_columns`."""
    chosen = [jobs] if columns is None else [jobs.c[name] for name in columns]
    query = select(*chosen).where(
        *_where(partitions, org_id=org_id, kinds=kinds, statuses=statuses)
    )
    if not_status is not None:
        query = query.where(jobs.c.status != not_status.value)
    if item_key_prefix is not None:
        query = query.where(jobs.c.item_key.startswith(item_key_prefix, autoescape=True))
    return query


def counter_rows(partitions: Sequence[str]) -> CompoundSelect[Any]:
    """The partitions' job counters (kept by every move, see `valuerank.queue.events`): one
    row per (partition, status), as `partition`, `status`, `n`; none for a partition never
    seen. Costs the same for a partition of ten jobs or a million."""
    c = queue_controls.c
    return union_all(
        *(
            select(
                c.key.label("partition"),
                literal(status.value, String).label("status"),
                c[column].label("n"),
            ).where(c.scope == PARTITION_SCOPE, c.key.in_(list(partitions)))
            for status, column in COUNTER_COLUMNS.items()
        )
    )


def live_jobs_exist(partition: ColumnElement[Any]) -> Exists:
    """`EXISTS` a queued or running job in the partition named by `partition` (a column of
    the caller's query, e.g. a run's id): for a query over the owner's rows."""
    return exists().where(jobs.c.partition == partition, jobs.c.status.in_([s.value for s in LIVE]))


# -- reads ------------------------------------------------------------------------------------


async def status_counts(
    conn: AsyncConnection,
    partition: str,
    *,
    org_id: str | None = None,
    kinds: Sequence[str] | None = None,
    other_than_kind: str | None = None,
) -> Counter[str]:
    """The partition's jobs per status, counted one by one (exact; O(jobs) of those kinds).
    `partition_progress` (queue/events.py) reads the counters instead."""
    query = job_counts(partition, org_id=org_id, kinds=kinds, other_than_kind=other_than_kind)
    return Counter({str(status): int(n) for status, n in await conn.execute(query)})


async def has_live_jobs(
    conn: AsyncConnection, partition: str, *, org_id: str | None = None
) -> bool:
    """Whether a job of the partition is queued or running."""
    # One status at a time, so that each lookup is a range of its partial index (queued,
    # running) rather than a walk through the partition's finished jobs.
    for status in LIVE:
        query = select(jobs.c.id).where(*_where(partition, org_id=org_id, statuses=[status]))
        if (await conn.execute(query.limit(1))).first() is not None:
            return True
    return False


async def has_running_jobs(
    conn: AsyncConnection, partitions: str | Sequence[str], *, org_id: str | None = None
) -> bool:
    """Whether a job of the partitions is running (a worker holds it)."""
    where = _where(partitions, org_id=org_id, statuses=[JobStatus.RUNNING])
    return (await conn.execute(select(jobs.c.id).where(*where).limit(1))).first() is not None


@functools.cache
def _live_up_to(limit: int) -> Select[Any]:
    def live(status: JobStatus) -> Any:
        # The status a literal in the SQL, so that both databases use its partial index:
        # at most `limit` index entries read, however large the partition.
        found = (
            select(literal_column("1"))
            .select_from(jobs)
            .where(
                jobs.c.org_id == bindparam("org_id"),
                jobs.c.partition == bindparam("partition"),
                jobs.c.status == literal_column(f"'{status.value}'"),
                jobs.c.kind == bindparam("kind"),
            )
            .limit(limit)
            .subquery()
        )
        return select(func.count()).select_from(found).scalar_subquery()

    return select(live(JobStatus.QUEUED) + live(JobStatus.RUNNING))


async def live_jobs_up_to(
    conn: AsyncConnection, org_id: str, partition: str, kind: str, limit: int
) -> int:
    """How many of the partition's `kind` jobs are queued plus running, each counted only up
    to `limit`: cheap enough to ask at the end of every job."""
    params = {"org_id": org_id, "partition": partition, "kind": kind}
    return int((await conn.execute(_live_up_to(limit), params)).scalar_one())


async def jobs_of(
    conn: AsyncConnection,
    org_id: str,
    partition: str,
    *,
    kinds: Sequence[str] | None = None,
    not_status: JobStatus | None = None,
    item_key_prefix: str | None = None,
    limit: int = 1000,
) -> list[Job]:
    """The partition's jobs, oldest first, optionally of some kinds, not in one status, or
    whose item key starts with a prefix (the partition's unique index serves that)."""
    query = job_rows(
        partition,
        org_id=org_id,
        kinds=kinds,
        not_status=not_status,
        item_key_prefix=item_key_prefix,
    )
    rows = await conn.execute(query.order_by(jobs.c.created_at, jobs.c.id).limit(limit))
    return [job_from_row(row) for row in rows]


def _event_of(row: Any) -> Event:
    try:
        type: EventType | str = EventType(row.type)
    except ValueError:
        type = row.type  # another package's type (a run's end, say)
    return Event(row.partition, row.seq, row.org_id, type, row.data, as_utc(row.created_at))


async def last_event(
    conn: AsyncConnection,
    org_id: str,
    partition: str,
    *,
    types: Sequence[str],
    up_to: int | None = None,
) -> Event | None:
    """The partition's newest event of one of `types` (with seq ≤ `up_to`), if any."""
    query = select(events).where(
        events.c.partition == partition, events.c.org_id == org_id, events.c.type.in_(types)
    )
    if up_to is not None:
        query = query.where(events.c.seq <= up_to)
    row = (await conn.execute(query.order_by(events.c.seq.desc()).limit(1))).first()
    return None if row is None else _event_of(row)


async def count_events(
    conn: AsyncConnection,
    org_id: str,
    partition: str,
    *,
    types: Sequence[str],
    after: int = 0,
    up_to: int | None = None,
    data: Mapping[str, str] | None = None,
) -> dict[str, int]:
    """The partition's events of `types` with `after` < seq ≤ `up_to`, counted per type;
    `data`: only events whose data has these string fields."""
    query = select(events.c.type, func.count()).where(
        events.c.partition == partition,
        events.c.org_id == org_id,
        events.c.seq > after,
        events.c.type.in_(types),
    )
    if up_to is not None:
        query = query.where(events.c.seq <= up_to)
    for name, value in (data or {}).items():
        query = query.where(events.c.data[name].as_string() == value)
    rows = await conn.execute(query.group_by(events.c.type))
    return {str(kind): int(n) for kind, n in rows}


# -- writes -----------------------------------------------------------------------------------


async def delete_jobs(
    conn: AsyncConnection,
    org_id: str,
    partition: str,
    *,
    kind: str,
    statuses: Sequence[JobStatus] = FINISHED,
    models: Sequence[str] | None = None,
) -> int:
    """Delete the partition's finished jobs of `kind` (in `statuses`, of `models`), their
    errors first, as pruning does, and take them off the partition's counters. A job still
    queued or running is never deleted: it holds a place, or a worker holds it."""
    if any(s not in FINISHED for s in statuses):
        raise ValueError("only finished jobs can be deleted")
    ids = select(jobs.c.id).where(
        *_where(partition, org_id=org_id, kinds=[kind], statuses=statuses, models=models)
    )
    await conn.execute(delete(job_errors).where(job_errors.c.job_id.in_(ids.scalar_subquery())))
    gone = (
        await conn.execute(
            delete(jobs).where(jobs.c.id.in_(ids.scalar_subquery())).returning(jobs.c.status)
        )
    ).scalars()
    delta: Counter[JobStatus] = Counter()
    for status in gone:
        delta[JobStatus(status)] -= 1
    await add_counts(conn, partition, delta)
    return -sum(delta.values())


class PartitionBusy(ConflictError):
    """A partition to delete has a running job: a worker holds it (and its slots)."""


@dataclass(frozen=True)
class Deleted:
    jobs: int
    events: int
    controls: int


async def delete_partitions(
    conn: AsyncConnection, org_id: str, partitions: Sequence[str]
) -> Deleted:
    """Delete everything the queue keeps about the organisation's partitions: their jobs with
    their errors, their events and their control rows (counters, pause, cancel). Refuses
    (`PartitionBusy`) while a job of them is running, since the slots it holds are released
    only by the statement that moves it out of `running`; cancel the partition, then wait."""
    names = sorted(set(partitions))
    if await has_running_jobs(conn, names, org_id=org_id):
        raise PartitionBusy(f"a job of {', '.join(names)} is running")
    of_jobs = select(jobs.c.id).where(*_where(names, org_id=org_id))
    await conn.execute(delete(job_errors).where(job_errors.c.job_id.in_(of_jobs.scalar_subquery())))
    gone_jobs = await conn.execute(delete(jobs).where(*_where(names, org_id=org_id)))
    gone_events = await conn.execute(
        delete(events).where(events.c.org_id == org_id, events.c.partition.in_(names))
    )
    gone_controls = await conn.execute(
        delete(queue_controls).where(
            queue_controls.c.scope == PARTITION_SCOPE,
            queue_controls.c.org_id == org_id,
            queue_controls.c.key.in_(names),
        )
    )
    return Deleted(
        jobs=int(gone_jobs.rowcount or 0),
        events=int(gone_events.rowcount or 0),
        controls=int(gone_controls.rowcount or 0),
    )
