"""A run's status for those who read it (`runs status`, `runs wait`, the API, the UI): its
report, and the finalize job of a run stalled with nothing left in its queue (the check and
the healing are `run_end`'s; this module only decides when to take the write lock).

Kept apart from launching runs and from the finalize step: reading a status would otherwise
load the credentials, the registry, the prompts, the model calls and the analysis step."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.engine import Database
from valuerank.pipeline.run_end import heal_stalled, stalled
from valuerank.runs.progress import RunReport, run_report


async def refresh_report(conn: AsyncConnection, org_id: str, ref: str) -> RunReport:
    """The run's report; a running run with nothing left in the queue gets its finalize job
    (self-healing when the job that should have enqueued it never ran its last step)."""
    report = await run_report(conn, org_id, ref)
    await heal_stalled(conn, report.run)
    return report


async def watch_report(db: Database, org_id: str, ref: str) -> RunReport:
    """`refresh_report` for pollers: a read-only transaction, and a short write one only in
    the rare case the run needs healing. On SQLite a poller that asked for the write lock
    every half second could starve behind busy workers; a reader never waits."""
    async with db.transaction() as conn:
        report = await run_report(conn, org_id, ref)
        needs_healing = await stalled(conn, report.run)
    if not needs_healing:
        return report
    async with db.transaction(immediate=True) as conn:
        return await refresh_report(conn, org_id, report.run.id)
