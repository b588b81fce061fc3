"""Putting jobs on the queue, idempotently.

`(partition, item_key)` is unique: enqueueing the same item twice (starting a run twice, a
retried HTTP request) adds nothing and says so with `enqueued=False`. One
`INSERT … ON CONFLICT DO NOTHING RETURNING id` on both dialects, sent as SQLAlchemy's batched
"insertmanyvalues"; the ids of rows that already existed are then looked up. The jobs really
inserted are added to their partitions' job counters (see `events.py`) in the same
transaction, which takes the partition rows' locks until it commits. Jobs enqueued into a
cancelled partition (see `controls.cancel_partition`) are cancelled at once: nothing would
ever claim them. On PostgreSQL the transaction also wakes idle workers at commit (one NOTIFY
for the jobs runnable now, see `wakeup.py`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from sqlalchemy import select, text, tuple_, update
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import jobs, queue_controls
from valuerank.errors import ConflictError, InvalidInputError
from valuerank.queue.dialect import db_now, to_db, upsert
from valuerank.queue.events import COUNTER_COLUMNS, PARTITION_SCOPE, add_counts, moved
from valuerank.queue.ids import new_id
from valuerank.queue.states import JobStatus
from valuerank.queue.wakeup import notify_jobs

PriorityName = Literal["low", "normal", "high"]
PRIORITIES: dict[str, int] = {"low": -10, "normal": 0, "high": 10}
# The runs' and jobs' `priority` columns are 32-bit integers (PostgreSQL refuses more).
MIN_PRIORITY, MAX_PRIORITY = -(2**31), 2**31 - 1
DEFAULT_MAX_ATTEMPTS = 3
CHUNK_ROWS = 500  # lookups of existing rows, well under the bound-parameter limits


def priority_value(priority: PriorityName | str | int) -> int:
    """`low`/`normal`/`high` or an integer in [MIN_PRIORITY, MAX_PRIORITY]; higher runs
    first."""
    if isinstance(priority, bool):
        raise InvalidInputError(f"invalid priority {priority!r}")
    if isinstance(priority, int):
        if not MIN_PRIORITY <= priority <= MAX_PRIORITY:
            raise InvalidInputError(
                f"invalid priority {priority}: out of range",
                hint=f"use an integer from {MIN_PRIORITY} to {MAX_PRIORITY}",
            )
        return priority
    try:
        return PRIORITIES[priority]
    except KeyError:
        raise InvalidInputError(
            f"invalid priority {priority!r}", hint="use low, normal, high or an integer"
        ) from None


def default_partition(org_id: str) -> str:
    """Where jobs enqueued without a partition go: one per organisation."""
    return f"default:{org_id}"


@dataclass(frozen=True)
class JobSpec:
    """A job to enqueue. Without `item_key` the job is never deduplicated.

    `partition` groups jobs (a run id, say) for controls, events and fairness; partition names
    are global and a partition belongs to one organisation. Without one, the job goes to its
    organisation's default partition. `run_at` (an aware datetime) or `delay_seconds`
    (counted on the database clock) holds it back; `provider` and `model` are labels that
    concurrency caps and controls look at.
    """

    kind: str
    org_id: str
    payload: Mapping[str, Any] = field(default_factory=dict)
    partition: str | None = None
    item_key: str | None = None
    priority: PriorityName | str | int = "normal"
    run_at: datetime | None = None
    delay_seconds: float | None = None
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    provider: str | None = None
    model: str | None = None


@dataclass(frozen=True)
class Enqueued:
    job_id: str
    partition: str
    item_key: str
    enqueued: bool  # False: the (partition, item_key) existed already; job_id is that job


def _row(dialect: str, spec: JobSpec, job_id: str, now: datetime) -> dict[str, Any]:
    """The row of a spec; `now` was read from the database clock."""
    if not spec.kind:
        raise InvalidInputError("a job needs a kind")
    if spec.max_attempts < 1:
        raise InvalidInputError(f"max_attempts must be at least 1, not {spec.max_attempts}")
    if spec.run_at is not None and spec.delay_seconds is not None:
        raise InvalidInputError("give run_at or delay_seconds, not both")
    if spec.run_at is not None:
        run_at = to_db(dialect, spec.run_at)
    else:
        run_at = now + timedelta(seconds=spec.delay_seconds or 0.0)
    return {
        "id": job_id,
        "org_id": spec.org_id,
        "partition": spec.partition or default_partition(spec.org_id),
        "item_key": spec.item_key if spec.item_key is not None else job_id,
        "kind": spec.kind,
        "payload": dict(spec.payload),
        "status": JobStatus.QUEUED.value,
        "priority": priority_value(spec.priority),
        "run_at": run_at,
        "attempts": 0,
        "max_attempts": spec.max_attempts,
        "cancel_requested": False,
        "provider": spec.provider,
        "model": spec.model,
        "created_at": now,
    }


async def _claim_partitions(conn: AsyncConnection, pairs: set[tuple[str, str]]) -> None:
    """A partition belongs to the organisation that first used it (its `queue_controls` row
    records the owner): refuse anyone else's jobs in it."""
    for partition, org_id in sorted(pairs):
        await conn.execute(
            upsert(conn)(queue_controls)
            .values(scope=PARTITION_SCOPE, key=partition, org_id=org_id)
            .on_conflict_do_nothing(index_elements=[queue_controls.c.scope, queue_controls.c.key])
        )
        owner = await conn.scalar(
            select(queue_controls.c.org_id).where(
                queue_controls.c.scope == PARTITION_SCOPE, queue_controls.c.key == partition
            )
        )
        if owner != org_id:
            raise ConflictError(
                f"partition {partition!r} belongs to another organisation",
                hint="partition names are global: use a unique id such as the run id",
            )


# Adds the new jobs to the partition's queued counter under its row lock, and reads in the
# same statement whether the partition is cancelled (after a cancel that committed first, on
# PostgreSQL too: the UPDATE re-reads the row it waited for).
_COUNT_QUEUED = text(
    f"UPDATE queue_controls SET {COUNTER_COLUMNS[JobStatus.QUEUED]} = "
    f"{COUNTER_COLUMNS[JobStatus.QUEUED]} + :n"
    " WHERE scope = 'partition' AND key = :partition RETURNING cancel_requested"
)


async def _count_queued(conn: AsyncConnection, partition: str, n: int) -> bool:
    """Count `n` new queued jobs of the partition; True if the partition is cancelled."""
    flag = await conn.scalar(_COUNT_QUEUED, {"partition": partition, "n": n})
    return bool(flag)


async def _cancel_new(conn: AsyncConnection, partition: str, ids: list[str], now: datetime) -> None:
    """Cancel at once jobs just enqueued into a cancelled partition: it is never claimed from,
    so they would wait forever (a probe finishing after its run was cancelled enqueues the
    run's finalize job). Only this transaction's own new rows are written: no lock waits."""
    for start in range(0, len(ids), CHUNK_ROWS):
        await conn.execute(
            update(jobs)
            .where(jobs.c.id.in_(ids[start : start + CHUNK_ROWS]))
            .values(status=JobStatus.CANCELLED.value, finished_at=now)
        )
    await add_counts(conn, partition, moved(JobStatus.QUEUED, JobStatus.CANCELLED, len(ids)))


async def enqueue(conn: AsyncConnection, spec: JobSpec) -> Enqueued:
    """Enqueue one job (see `enqueue_many`)."""
    return (await enqueue_many(conn, [spec]))[0]


async def enqueue_many(conn: AsyncConnection, specs: Sequence[JobSpec]) -> list[Enqueued]:
    """Enqueue jobs; one result per spec, in order. Duplicates (in the batch or already stored)
    come back with `enqueued=False` and the id of the existing job.

    Raises `ConflictError` if a partition belongs to another organisation.
    """
    dialect = conn.dialect.name
    # One reading of the database clock for the batch: rows then bind plain values, so the
    # INSERT compiles once and runs as a batched executemany.
    now = await conn.scalar(select(db_now(dialect)))
    assert now is not None
    rows: list[dict[str, Any]] = []
    first: dict[tuple[str, str], dict[str, Any]] = {}
    order: list[tuple[str, str]] = []
    for spec in specs:
        row = _row(dialect, spec, new_id(), now)
        key = (row["partition"], row["item_key"])
        order.append(key)
        if key not in first:
            first[key] = row
            rows.append(row)

    await _claim_partitions(conn, {(row["partition"], row["org_id"]) for row in rows})
    inserted: set[str] = set()
    cancelled: set[str] = set()
    if rows:
        stmt = (
            upsert(conn)(jobs)
            .on_conflict_do_nothing(index_elements=[jobs.c.partition, jobs.c.item_key])
            .returning(jobs.c.id)
        )
        inserted.update((await conn.execute(stmt, rows)).scalars())
        # The partitions' job counters (see queue/events.py), in partition order (lock order).
        added = Counter(row["partition"] for row in rows if row["id"] in inserted)
        for partition in sorted(added):
            if await _count_queued(conn, partition, added[partition]):
                ids = [r["id"] for r in rows if r["partition"] == partition and r["id"] in inserted]
                await _cancel_new(conn, partition, ids, now)
                cancelled.update(ids)
        # Jobs held back (run_at later) wake nobody: the workers' poll and timers cover them.
        runnable = {
            row["kind"]
            for row in rows
            if row["id"] in inserted and row["id"] not in cancelled and row["run_at"] <= now
        }
        if runnable:
            await notify_jobs(conn, runnable)

    existing: dict[tuple[str, str], str] = {}
    missing = [k for k, row in first.items() if row["id"] not in inserted]
    for start in range(0, len(missing), CHUNK_ROWS):
        found = await conn.execute(
            select(jobs.c.partition, jobs.c.item_key, jobs.c.id).where(
                tuple_(jobs.c.partition, jobs.c.item_key).in_(missing[start : start + CHUNK_ROWS])
            )
        )
        for partition, item_key, job_id in found:
            existing[(partition, item_key)] = job_id

    results: list[Enqueued] = []
    seen: set[tuple[str, str]] = set()
    for key in order:
        row = first[key]
        if row["id"] in inserted:
            results.append(Enqueued(row["id"], key[0], key[1], enqueued=key not in seen))
        else:
            results.append(Enqueued(existing[key], key[0], key[1], enqueued=False))
        seen.add(key)
    return results
