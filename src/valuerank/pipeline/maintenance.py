"""ValueRank's maintenance: the queue's full pass (`queue/maintenance.py`) plus the pipeline's
chores, the same from every entry point — the workers' periodic pass (the chores are added to
each worker by `register_pipeline_handlers`), `valuerank maintenance run`, and the system API.

The queue knows nothing about runs; the pipeline adds what it needs to every pass here:
`stale_runs`, reaping runs left open with no live job (`pipeline/run_end.py`), and
`response_cache`, deleting cached model answers older than `VALUERANK_RESPONSE_CACHE_DAYS`
(a batch per pass, oldest first; 0 keeps them); and `transcript_retention`, exporting then
deleting the transcripts of runs finished longer ago than VALUERANK_TRANSCRIPT_RETENTION_DAYS
(`pipeline/transcript_retention.py`; 0, the default, keeps them).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.config import Settings
from valuerank.db.engine import Database
from valuerank.pipeline.calls import prune_response_cache
from valuerank.pipeline.run_end import reap_stale_runs
from valuerank.queue.maintenance import (
    DEFAULT_BATCH,
    FULL,
    Chore,
    MaintenanceRun,
    run_maintenance,
    run_pass,
)
from valuerank.queue.maintenance_history import database_now, recent_runs
from valuerank.queue.maintenance_schedule import ScheduleSummary, summarize_schedule
from valuerank.queue.settings import QueueSettings

STALE_RUNS = "stale_runs"
RESPONSE_CACHE = "response_cache"
TRANSCRIPT_RETENTION = "transcript_retention"
REAP_STALE_RUNS = "reap_stale_runs"  # the kind of a pass that only reaps stale runs
SCHEDULE_WINDOW_INTERVALS = 100  # full passes looked at for the schedule's anomalies


async def _stale_runs(conn: AsyncConnection) -> dict[str, Any]:
    return await reap_stale_runs(conn)


@dataclass(frozen=True)
class Retention:
    """How long the pipeline keeps cached responses and transcripts (None: for ever), and
    where expiring transcripts are exported first: the process's settings, given explicitly
    by whoever builds the worker or the app."""

    response_cache_days: float | None = None
    transcript_retention_days: float | None = None
    transcript_export_dir: str | None = None

    @classmethod
    def of(cls, settings: Settings) -> Retention:
        return cls(
            response_cache_days=settings.response_cache_days,
            transcript_retention_days=settings.transcript_retention_days,
            transcript_export_dir=settings.transcript_export_dir,
        )


def maintenance_chores(retention: Retention) -> dict[str, Chore]:
    """What the pipeline adds to every full maintenance pass."""

    async def response_cache(conn: AsyncConnection) -> dict[str, Any]:
        days = retention.response_cache_days
        if not days:
            return {"pruned": 0, "more": False, "retention_days": None}
        pruned = await prune_response_cache(conn, older_than_days=days, batch=DEFAULT_BATCH)
        return {"pruned": pruned, "more": pruned == DEFAULT_BATCH, "retention_days": days}

    async def transcript_retention(conn: AsyncConnection) -> dict[str, Any]:
        days = retention.transcript_retention_days
        if not days:
            return {"retention_days": None, "runs": [], "deleted": 0, "more": False, "error": None}
        from valuerank.pipeline.transcript_retention import apply_transcript_retention

        return await apply_transcript_retention(
            conn, older_than_days=days, export_dir=retention.transcript_export_dir
        )

    return {
        STALE_RUNS: _stale_runs,
        RESPONSE_CACHE: response_cache,
        TRANSCRIPT_RETENTION: transcript_retention,
    }


async def maintain(
    db: Database,
    settings: QueueSettings,
    retention: Retention,
    *,
    trigger: str,
    wait: bool = True,
    skip_if_ran_within: float | None = None,
    worker_id: str | None = None,
) -> MaintenanceRun | None:
    """One full pass with the pipeline's chores. `wait` False: None when another pass holds
    the lock; `skip_if_ran_within`: None when a full pass started that recently."""
    return await run_maintenance(
        db,
        settings,
        worker_id=worker_id,
        trigger=trigger,
        wait=wait,
        skip_if_ran_within=skip_if_ran_within,
        chores=maintenance_chores(retention),
    )


async def reap_stale_runs_pass(db: Database, *, trigger: str) -> MaintenanceRun:
    """Only the stale-run reaping, now, as a recorded pass."""

    async def work(conn: AsyncConnection) -> dict[str, Any]:
        return {STALE_RUNS: await reap_stale_runs(conn)}

    done = await run_pass(db, REAP_STALE_RUNS, work, trigger=trigger)
    assert done is not None  # a waiting pass is never skipped
    return done


async def schedule_trigger(
    db: Database, settings: QueueSettings, retention: Retention, *, force: bool = False
) -> MaintenanceRun | None:
    """What the scheduler does at a tick: a full pass if one is due (none started within
    90 % of the interval, as the workers decide), or now whatever the schedule says with
    `force`. None when it was not due. For an external scheduler (cron) too."""
    window = None if force else 0.9 * settings.maintenance_interval_seconds
    return await maintain(db, settings, retention, trigger="schedule", skip_if_ran_within=window)


async def schedule_summary(
    conn: AsyncConnection, settings: QueueSettings, *, tolerance: float = 2.0
) -> tuple[ScheduleSummary, datetime]:
    """The schedule over the last `SCHEDULE_WINDOW_INTERVALS` intervals; and the database's
    now it was judged at."""
    interval = settings.maintenance_interval_seconds
    now = await database_now(conn)
    passes = await recent_runs(conn, window_seconds=interval * SCHEDULE_WINDOW_INTERVALS, kind=FULL)
    summary = summarize_schedule(passes, now=now, interval_seconds=interval, tolerance=tolerance)
    return summary, now
