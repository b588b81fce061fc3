"""A partition's job counters: how many of its jobs are in each status.

They live in the partition's `queue_controls` row, next to its event sequence (see
queue/events.py). Every statement or transaction that moves jobs adds its change (a `Delta`)
to them, in the same transaction: the bump that numbers the move's event applies it and
returns the counts, so an event's progress costs nothing, and is read under the row lock, so
concurrent finishers see each other. Moves without an event (enqueue, pruning) update the
counters directly (`add_counts`). Jobs whose status is changed behind the queue's back (plain
SQL) are not counted: a counter gone negative is put right at once by a real count
(`checked`); `complete_if_done` counts for real before it says a partition is finished; and
maintenance recounts the partitions whose counters say jobs are still active.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, func, select, text
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import jobs, queue_controls
from valuerank.queue.states import JobStatus

log = logging.getLogger(__name__)

PARTITION_SCOPE = "partition"

# The counter column of each status, in `JobStatus` order.
COUNTER_COLUMNS: dict[JobStatus, str] = {s: f"jobs_{s.value}" for s in JobStatus}
# A partition's control row whose counters say it has jobs queued or running (`Progress.active`).
COUNTS_ACTIVE = (queue_controls.c.jobs_queued != 0) | (queue_controls.c.jobs_running != 0)

Delta = Mapping[JobStatus, int]
"""A change of a partition's job counts: status → jobs gained (negative: lost)."""


def moved(source: JobStatus, target: JobStatus, n: int = 1) -> dict[JobStatus, int]:
    """The delta of `n` jobs moving from `source` to `target`."""
    if source is target or n == 0:
        return {}
    return {source: -n, target: n}


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

    @classmethod
    def from_row(cls, row: Any) -> Progress:
        """The counters of a row holding the `jobs_<status>` columns."""
        return cls.from_mapping(row._mapping)

    @classmethod
    def from_mapping(cls, m: Mapping[str, Any]) -> Progress:
        return cls({s.value: int(m[column]) for s, column in COUNTER_COLUMNS.items()})


_COUNTS = ", ".join(COUNTER_COLUMNS.values())

_ADD_COUNTS = text(
    "UPDATE queue_controls SET "
    + ", ".join(f"{c} = {c} + :{c}" for c in COUNTER_COLUMNS.values())
    + " WHERE scope = 'partition' AND key = :partition"
)

_SET_COUNTS = text(
    "INSERT INTO queue_controls (scope, key, org_id, last_seq, "
    + _COUNTS
    + ") VALUES ('partition', :partition, :org_id, 0, "
    + ", ".join(f":{c}" for c in COUNTER_COLUMNS.values())
    + ") ON CONFLICT (scope, key) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in COUNTER_COLUMNS.values())
)

_READ_COUNTS = select(*(queue_controls.c[c] for c in COUNTER_COLUMNS.values())).where(
    queue_controls.c.scope == PARTITION_SCOPE,
    queue_controls.c.key == bindparam("partition", type_=queue_controls.c.key.type),
)

_COUNT_JOBS = (
    select(jobs.c.status, func.count())
    .where(jobs.c.partition == bindparam("partition", type_=jobs.c.partition.type))
    .group_by(jobs.c.status)
)


def delta_params(delta: Delta | None) -> dict[str, int]:
    delta = delta or {}
    return {c: int(delta.get(s, 0)) for s, c in COUNTER_COLUMNS.items()}


async def checked(
    conn: AsyncConnection, org_id: str, partition: str, progress: Progress
) -> Progress:
    """`progress` as read under the partition row's lock, unless a counter went negative:
    jobs were added or moved behind the queue's back (say, inserted with plain SQL), and the
    partition is counted for real, once, to put the counters right."""
    if all(n >= 0 for n in progress.counts.values()):
        return progress
    counted, _ = await recount_partition(conn, org_id, partition)
    return counted


async def add_counts(conn: AsyncConnection, partition: str, delta: Delta) -> None:
    """Add `delta` to a partition's counters, for moves that write no event (enqueue, prune).
    Locks the partition's row; a partition without one (no job ever enqueued) is left be."""
    if any(delta.values()):
        await conn.execute(_ADD_COUNTS, {"partition": partition, **delta_params(delta)})


async def partition_progress(conn: AsyncConnection, partition: str) -> Progress:
    """The partition's counters (all zero for a partition never seen)."""
    row = (await conn.execute(_READ_COUNTS, {"partition": partition})).first()
    if row is None:
        return Progress({s.value: 0 for s in JobStatus})
    return Progress.from_row(row)


async def count_partition(conn: AsyncConnection, partition: str) -> Progress:
    """The partition's jobs counted one by one (O(jobs)): the truth the counters keep."""
    rows = await conn.execute(_COUNT_JOBS, {"partition": partition})
    found = {status: int(n) for status, n in rows}
    return Progress({s.value: found.get(s.value, 0) for s in JobStatus})


async def recount_partition(
    conn: AsyncConnection, org_id: str, partition: str
) -> tuple[Progress, bool]:
    """Set the partition's counters to a real count; returns it and whether they differed.

    Takes the partition row's lock first (PostgreSQL; SQLite's write lock is held already),
    so that no move of its jobs is half counted: a move commits its jobs and its counters
    together, and its counters wait for this lock."""
    lock = _READ_COUNTS
    if conn.dialect.name == "postgresql":
        lock = lock.with_for_update()
    row = (await conn.execute(lock, {"partition": partition})).first()
    counted = await count_partition(conn, partition)
    if row is not None and Progress.from_row(row).counts == counted.counts:
        return counted, False
    if row is not None:
        log.warning(
            "partition %s: job counters %s corrected to %s (jobs changed outside the queue?)",
            partition,
            Progress.from_row(row).counts,
            counted.counts,
        )
    params = {c: counted.counts[s.value] for s, c in COUNTER_COLUMNS.items()}
    await conn.execute(_SET_COUNTS, {"partition": partition, "org_id": org_id, **params})
    return counted, True
