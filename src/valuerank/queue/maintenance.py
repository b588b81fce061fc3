"""Periodic housekeeping: reap, prune what is old, spot stuck partitions, and keep a record.

One maintenance run is one transaction. It takes a lock first so that two workers do not
run it at the same instant: on PostgreSQL `pg_try_advisory_xact_lock` (keyed by the current
schema, so schemas sharing a database do not block each other; released at commit), and a
worker that does not get it skips; on SQLite the transaction is `BEGIN IMMEDIATE`, which
serialises writers. With `skip_if_ran_within`, a run also skips when another one started
that recently (read under the lock): every worker can schedule maintenance and the fleet
still runs it about once per interval. A skipped run returns None.

What a run does, all counted in its `maintenance_runs` row:
- reap expired leases and overdue jobs (`reaper.reap`);
- delete finished jobs (succeeded, failed, cancelled) whose `finished_at` is older than
  `retention_days`, with their `job_errors`;
- with `event_retention_days` set, delete events older than it of partitions with nothing
  queued or running, but never a partition's last event: a run's end (`run_complete`)
  carries its counts, so its feed still replays to the right progress;
- delete delivered outbox rows older than the retention (dead ones stay, to be retried);
- delete maintenance records older than the retention;
- recount the jobs of live partitions and correct their progress counters where jobs were
  changed behind the queue's back (`events.recount_partition`);
- count stale partitions: due queued jobs waiting longer than `stale_after_seconds` while no
  job of the partition started or finished in that time, and the partition not paused.
Each delete takes at most `batch` rows per run, which bounds the transaction; `more` in the
record says a next run has more to prune.

- then the chores the caller adds (`chores`: name → function of the connection, e.g. the
  pipeline's stale-run reaping), in the same transaction and under the same lock, each result
  stored under its name: two passes at once never do a chore twice.

If the work fails, the transaction rolls back and a `failed` record with the error is written
on its own; the record is returned either way.

Every pass records its `kind` (`full`: the above; or one operation run alone through
`run_pass`, e.g. `prune_jobs`) and its `trigger` (worker, cli, api, schedule). Only full passes
count for `skip_if_ran_within` and for the schedule (see `maintenance_schedule.py`).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, exists, func, insert, or_, select, text
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.engine import Database
from valuerank.db.tables import jobs, maintenance_runs, outbox, queue_controls
from valuerank.queue.dialect import as_utc, db_now, db_now_plus, iso
from valuerank.queue.events import (
    COUNTS_ACTIVE,
    PARTITION_SCOPE,
    complete_if_done,
    recount_partition,
)
from valuerank.queue.ids import new_id
from valuerank.queue.outbox.statuses import DELIVERED
from valuerank.queue.prune import delete_batch, prune_events, prune_jobs
from valuerank.queue.reaper import reap
from valuerank.queue.settings import QueueSettings
from valuerank.queue.states import JobStatus

log = logging.getLogger(__name__)

SUCCEEDED, FAILED = "succeeded", "failed"
DEFAULT_BATCH = 5000
DEFAULT_STALE_AFTER_SECONDS = 3600.0
STALE_SAMPLE = 20  # partition names kept in the record
LOCK_NAME = "valuerank.queue.maintenance"
FULL = "full"  # the kind of the scheduled pass
TRIGGERS = ("worker", "cli", "api", "schedule")

# A chore: work done in the pass's transaction; its result (JSON-serialisable) is recorded.
Chore = Callable[[AsyncConnection], Awaitable[Any]]


@dataclass(frozen=True)
class MaintenanceRun:
    id: str
    worker_id: str | None
    status: str  # succeeded | failed
    actions: dict[str, Any]
    error: str | None
    started_at: datetime
    finished_at: datetime
    duration_ms: int
    kind: str = FULL
    trigger: str = "worker"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "trigger": self.trigger,
            "worker_id": self.worker_id,
            "status": self.status,
            "actions": self.actions,
            "error": self.error,
            "started_at": iso(self.started_at),
            "finished_at": iso(self.finished_at),
            "duration_ms": self.duration_ms,
        }


def _record(row: Any) -> MaintenanceRun:
    return MaintenanceRun(
        id=row.id,
        worker_id=row.worker_id,
        status=row.status,
        actions=dict(row.actions),
        error=row.error,
        started_at=as_utc(row.started_at),
        finished_at=as_utc(row.finished_at),
        duration_ms=row.duration_ms,
        kind=row.kind,
        trigger=row.trigger,
    )


async def _lock(conn: AsyncConnection, *, wait: bool) -> bool:
    """Take the maintenance lock for this transaction; False if not waiting and it is held."""
    if conn.dialect.name != "postgresql":
        return True  # BEGIN IMMEDIATE already holds SQLite's write lock
    function = "pg_advisory_xact_lock" if wait else "pg_try_advisory_xact_lock"
    got = await conn.scalar(
        text(f"SELECT {function}(hashtext(current_schema() || :name))::text"),
        {"name": ":" + LOCK_NAME},
    )
    return wait or got == "true"


async def _ran_within(conn: AsyncConnection, seconds: float) -> bool:
    recent = await conn.scalar(
        select(func.count())
        .select_from(maintenance_runs)
        .where(
            maintenance_runs.c.kind == FULL,
            maintenance_runs.c.started_at > db_now_plus(conn.dialect.name, -seconds),
        )
    )
    return bool(recent)


async def recount_live_partitions(conn: AsyncConnection, *, limit: int) -> int:
    """Count for real the jobs of up to `limit` partitions whose counters say some are queued
    or running, correct the counters that are wrong (jobs changed behind the queue's back),
    and complete a partition found finished. Returns how many were corrected."""
    live = (
        select(queue_controls.c.key, queue_controls.c.org_id)
        .where(
            queue_controls.c.scope == PARTITION_SCOPE,
            queue_controls.c.org_id.is_not(None),
            COUNTS_ACTIVE,
        )
        .order_by(queue_controls.c.key)
        .limit(limit)
    )
    corrected = 0
    for partition, org_id in (await conn.execute(live)).all():
        progress, changed = await recount_partition(conn, org_id, partition)
        if changed:
            corrected += 1
            if not progress.active:
                await complete_if_done(conn, org_id, partition, progress=progress)
    return corrected


async def stale_partitions(conn: AsyncConnection, *, stale_after_seconds: float) -> list[str]:
    """Partitions with due queued jobs waiting longer than the threshold, where no job started
    or finished within it, and which are not paused: the queue is not serving them."""
    cutoff = db_now_plus(conn.dialect.name, -stale_after_seconds)
    active = jobs.alias("active")
    recent_activity = exists().where(
        active.c.partition == jobs.c.partition,
        or_(active.c.started_at > cutoff, active.c.finished_at > cutoff),
    )
    paused = exists().where(
        queue_controls.c.scope == PARTITION_SCOPE,
        queue_controls.c.key == jobs.c.partition,
        queue_controls.c.paused.is_(True),
    )
    rows = await conn.execute(
        select(jobs.c.partition)
        .where(
            and_(jobs.c.status == JobStatus.QUEUED.value, jobs.c.run_at < cutoff),
            ~recent_activity,
            ~paused,
        )
        .group_by(jobs.c.partition)
        .order_by(jobs.c.partition)
    )
    return list(rows.scalars())


async def _work(
    conn: AsyncConnection,
    settings: QueueSettings,
    *,
    batch: int,
    stale_after_seconds: float,
    chores: Mapping[str, Chore],
) -> dict[str, Any]:
    dialect = conn.dialect.name
    retention = settings.retention_days * 86400.0
    cutoff = db_now_plus(dialect, -retention)
    reaped = await reap(conn, settings)
    pruned_jobs = await prune_jobs(conn, older_than_seconds=retention, batch=batch)
    pruned_outbox = await delete_batch(
        conn, outbox, [outbox.c.status == DELIVERED, outbox.c.delivered_at < cutoff], batch
    )
    pruned_runs = await delete_batch(
        conn, maintenance_runs, [maintenance_runs.c.started_at < cutoff], batch
    )
    pruned_events = 0
    if settings.event_retention_days > 0:
        pruned_events = await prune_events(
            conn, older_than_seconds=settings.event_retention_days * 86400.0, batch=batch
        )
    recounted = await recount_live_partitions(conn, limit=batch)
    stale = await stale_partitions(conn, stale_after_seconds=stale_after_seconds)
    done = {name: await chore(conn) for name, chore in chores.items()}
    return {
        "reaped": {
            "requeued": len(reaped.requeued),
            "failed": len(reaped.failed),
            "cancelled": len(reaped.cancelled),
            "timed_out": len(reaped.timed_out),
        },
        "pruned_jobs": pruned_jobs,
        "pruned_outbox": pruned_outbox,
        "pruned_maintenance_runs": pruned_runs,
        "pruned_events": pruned_events,
        "recounted_partitions": recounted,
        "stale_partitions": len(stale),
        "stale_partition_sample": stale[:STALE_SAMPLE],
        "more": batch in (pruned_jobs, pruned_outbox, pruned_runs, pruned_events),
        **done,
    }


async def _insert_record(
    conn: AsyncConnection,
    *,
    kind: str,
    trigger: str,
    worker_id: str | None,
    status: str,
    actions: dict[str, Any],
    error: str | None,
    started_at: datetime,
    duration_ms: int,
) -> MaintenanceRun:
    run_id = new_id()
    await conn.execute(
        insert(maintenance_runs).values(
            id=run_id,
            org_id=None,
            kind=kind,
            trigger=trigger,
            worker_id=worker_id,
            status=status,
            actions=actions,
            error=error,
            started_at=started_at,
            finished_at=started_at + timedelta(milliseconds=duration_ms),
            duration_ms=duration_ms,
        )
    )
    row = (
        await conn.execute(select(maintenance_runs).where(maintenance_runs.c.id == run_id))
    ).one()
    return _record(row)


async def run_pass(
    db: Database,
    kind: str,
    work: Callable[[AsyncConnection], Awaitable[dict[str, Any]]],
    *,
    trigger: str = "worker",
    worker_id: str | None = None,
    wait: bool = True,
    skip_if_ran_within: float | None = None,
) -> MaintenanceRun | None:
    """Run `work` as one recorded maintenance pass of `kind`, under the maintenance lock (see
    the module). None when skipped: `wait` False and another pass holds the lock, or a full
    pass started within `skip_if_ran_within` seconds."""
    if trigger not in TRIGGERS:
        raise ValueError(f"unknown maintenance trigger {trigger!r}")
    clock = time.monotonic()
    started_at: datetime | None = None
    record = functools.partial(_insert_record, kind=kind, trigger=trigger, worker_id=worker_id)
    try:
        async with db.transaction(immediate=True) as conn:
            if not await _lock(conn, wait=wait):
                return None
            if skip_if_ran_within is not None and await _ran_within(conn, skip_if_ran_within):
                return None
            started_at = await conn.scalar(select(db_now(conn.dialect.name)))
            assert started_at is not None
            actions = await work(conn)
            return await record(
                conn,
                status=SUCCEEDED,
                actions=actions,
                error=None,
                started_at=started_at,
                duration_ms=round((time.monotonic() - clock) * 1000),
            )
    except Exception as exc:
        log.exception("maintenance (%s) failed", kind)
        error = f"{type(exc).__name__}: {exc}"[:4000]
        async with db.transaction(immediate=True) as conn:
            if started_at is None:
                started_at = await conn.scalar(select(db_now(conn.dialect.name)))
                assert started_at is not None
            return await record(
                conn,
                status=FAILED,
                actions={},
                error=error,
                started_at=started_at,
                duration_ms=round((time.monotonic() - clock) * 1000),
            )


async def run_maintenance(
    db: Database,
    settings: QueueSettings,
    *,
    worker_id: str | None = None,
    trigger: str = "worker",
    wait: bool = False,
    skip_if_ran_within: float | None = None,
    stale_after_seconds: float = DEFAULT_STALE_AFTER_SECONDS,
    batch: int = DEFAULT_BATCH,
    chores: Mapping[str, Chore] | None = None,
) -> MaintenanceRun | None:
    """One full maintenance pass (see the module); None if another pass holds the lock (unless
    `wait`) or (with `skip_if_ran_within`) a full pass started that recently."""

    async def work(conn: AsyncConnection) -> dict[str, Any]:
        return await _work(
            conn,
            settings,
            batch=batch,
            stale_after_seconds=stale_after_seconds,
            chores=chores or {},
        )

    return await run_pass(
        db,
        FULL,
        work,
        trigger=trigger,
        worker_id=worker_id,
        wait=wait,
        skip_if_ran_within=skip_if_ran_within,
    )


async def last_maintenance(conn: AsyncConnection) -> MaintenanceRun | None:
    """The latest full pass."""
    row = (
        await conn.execute(
            select(maintenance_runs)
            .where(maintenance_runs.c.kind == FULL)
            .order_by(maintenance_runs.c.started_at.desc(), maintenance_runs.c.id.desc())
            .limit(1)
        )
    ).first()
    return None if row is None else _record(row)
