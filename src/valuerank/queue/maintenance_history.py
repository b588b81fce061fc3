"""Maintenance passes one at a time and their history: the single operations an operator runs
by hand (reap expired leases, prune finished jobs), each recorded like a full pass; the list
of passes (newest first, keyset by id: ids are time-ordered), one pass, and figures over a
window (`metrics`, a pure function of the passes).

Every pass is install-wide: the queue, its leases and its retention are shared by all
organisations, so its records have no organisation (`maintenance_runs.org_id` is NULL).
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.engine import Database
from valuerank.db.tables import maintenance_runs
from valuerank.errors import NotFoundError
from valuerank.queue.dialect import as_utc, db_now, db_now_plus, iso
from valuerank.queue.maintenance import (
    DEFAULT_BATCH,
    FULL,
    MaintenanceRun,
    _record,
    run_pass,
)
from valuerank.queue.prune import prune_jobs
from valuerank.queue.reaper import reap
from valuerank.queue.settings import QueueSettings

REAP_JOBS = "reap_jobs"
PRUNE_JOBS = "prune_jobs"
STATUSES = ("succeeded", "failed")


class MaintenanceRunNotFoundError(NotFoundError):
    code = "MAINTENANCE_RUN_NOT_FOUND"


async def reap_jobs_pass(
    db: Database, settings: QueueSettings, *, trigger: str, worker_id: str | None = None
) -> MaintenanceRun:
    """Reap expired leases and overdue jobs now (as every worker does periodically)."""

    async def work(conn: AsyncConnection) -> dict[str, Any]:
        reaped = await reap(conn, settings)
        return {
            "reaped": {
                "requeued": len(reaped.requeued),
                "failed": len(reaped.failed),
                "cancelled": len(reaped.cancelled),
                "timed_out": len(reaped.timed_out),
            }
        }

    done = await run_pass(db, REAP_JOBS, work, trigger=trigger, worker_id=worker_id)
    assert done is not None  # a waiting pass is never skipped
    return done


async def prune_jobs_pass(
    db: Database,
    *,
    retention_days: float,
    trigger: str,
    batch: int = DEFAULT_BATCH,
    worker_id: str | None = None,
) -> MaintenanceRun:
    """Delete up to `batch` finished jobs (succeeded, failed, cancelled) older than
    `retention_days`, with their errors; `more` says whether some are left."""

    async def work(conn: AsyncConnection) -> dict[str, Any]:
        pruned = await prune_jobs(conn, older_than_seconds=retention_days * 86400.0, batch=batch)
        return {"retention_days": retention_days, "pruned_jobs": pruned, "more": pruned >= batch}

    done = await run_pass(db, PRUNE_JOBS, work, trigger=trigger, worker_id=worker_id)
    assert done is not None
    return done


async def list_maintenance_runs(
    conn: AsyncConnection,
    *,
    kind: str | None = None,
    status: str | None = None,
    before_id: str | None = None,
    limit: int = 50,
) -> list[MaintenanceRun]:
    """Passes newest first (by id), optionally of one kind or status, before `before_id`."""
    query = select(maintenance_runs)
    if kind is not None:
        query = query.where(maintenance_runs.c.kind == kind)
    if status is not None:
        query = query.where(maintenance_runs.c.status == status)
    if before_id is not None:
        query = query.where(maintenance_runs.c.id < before_id)
    rows = await conn.execute(query.order_by(maintenance_runs.c.id.desc()).limit(limit))
    return [_record(r) for r in rows]


async def get_maintenance_run(conn: AsyncConnection, run_id: str) -> MaintenanceRun:
    row = (
        await conn.execute(select(maintenance_runs).where(maintenance_runs.c.id == run_id))
    ).first()
    if row is None:
        raise MaintenanceRunNotFoundError(
            f"no maintenance pass {run_id!r}",
            hint="GET /api/system/queue/maintenance/runs (or `valuerank maintenance history`) "
            "lists them",
        )
    return _record(row)


async def database_now(conn: AsyncConnection) -> datetime:
    """The database's clock (the one every worker agrees on), as an aware UTC datetime."""
    now = await conn.scalar(select(db_now(conn.dialect.name)))
    assert now is not None
    return as_utc(now)


async def recent_runs(
    conn: AsyncConnection, *, window_seconds: float, kind: str | None = None, limit: int = 10_000
) -> list[MaintenanceRun]:
    """Passes started within the window (by the database clock), oldest first."""
    query = select(maintenance_runs).where(
        maintenance_runs.c.started_at > db_now_plus(conn.dialect.name, -window_seconds)
    )
    if kind is not None:
        query = query.where(maintenance_runs.c.kind == kind)
    rows = await conn.execute(query.order_by(maintenance_runs.c.id.desc()).limit(limit))
    return [_record(r) for r in reversed(list(rows))]


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _work_done(actions: dict[str, Any]) -> Counter[str]:
    """What one pass did, as counters (the actions' shapes of full and single passes)."""
    done: Counter[str] = Counter()
    reaped = actions.get("reaped")
    if isinstance(reaped, dict):
        done["jobs_reaped"] += sum(_int(v) for v in reaped.values())
    for key in ("pruned_jobs", "pruned_outbox", "pruned_maintenance_runs", "pruned_events"):
        done[key] += _int(actions.get(key))
    stale = actions.get("stale_runs")
    if isinstance(stale, dict):
        done["stale_runs_reaped"] += _int(stale.get("reaped"))
        done["stale_runs_resumed"] += _int(stale.get("resumed"))
    return done


def _percentile(values: Sequence[int], q: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return float(values[0])
    return round(statistics.quantiles(values, n=100, method="inclusive")[round(q) - 1], 1)


def metrics(
    passes: Sequence[MaintenanceRun], *, now: datetime, window_seconds: float
) -> dict[str, Any]:
    """Figures over the passes of a window: counts by kind, trigger and status, the full
    passes' durations, what they did in total, and the last full pass."""
    full = [p for p in passes if p.kind == FULL]
    durations = sorted(p.duration_ms for p in full)
    done: Counter[str] = Counter()
    for p in passes:
        done.update(_work_done(p.actions))
    last = max(full, key=lambda p: (p.started_at, p.id), default=None)
    return {
        "window_seconds": window_seconds,
        "passes": len(passes),
        "by_kind": dict(sorted(Counter(p.kind for p in passes).items())),
        "by_trigger": dict(sorted(Counter(p.trigger for p in passes).items())),
        "by_status": {s: sum(1 for p in passes if p.status == s) for s in STATUSES},
        "full_passes": len(full),
        "full_failed": sum(1 for p in full if p.status == "failed"),
        "duration_ms": {
            "mean": round(statistics.fmean(durations), 1) if durations else None,
            "p50": _percentile(durations, 50),
            "p95": _percentile(durations, 95),
            "max": durations[-1] if durations else None,
        },
        "totals": {
            key: done[key]
            for key in (
                "jobs_reaped",
                "pruned_jobs",
                "pruned_outbox",
                "pruned_maintenance_runs",
                "pruned_events",
                "stale_runs_reaped",
                "stale_runs_resumed",
            )
        },
        "last_full_pass": None
        if last is None
        else {
            "id": last.id,
            "status": last.status,
            "started_at": iso(last.started_at),
            "age_seconds": round(max((now - last.finished_at).total_seconds(), 0.0), 3),
        },
    }


async def maintenance_metrics(conn: AsyncConnection, *, window_seconds: float) -> dict[str, Any]:
    """`metrics` of the passes of the last `window_seconds`, at the database's now."""
    now = await database_now(conn)
    passes = await recent_runs(conn, window_seconds=window_seconds)
    return metrics(passes, now=now, window_seconds=window_seconds)
