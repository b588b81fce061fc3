"""A run's status for those who read it (`runs status`, `runs wait`, the API, the UI): its
report, and the finalize job of a run stalled with nothing left in its queue.

Kept apart from launching runs, and the finalize step is imported only for a stalled run:
reading a status would otherwise load the credentials, the registry, the prompts, the model
calls and the analysis step."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.engine import Database
from valuerank.db.tables import jobs
from valuerank.queue.states import JobStatus
from valuerank.runs.progress import RunReport, run_report
from valuerank.runs.service import Run
from valuerank.runs.states import RunStatus


async def _stalled(conn: AsyncConnection, run: Run) -> bool:
    """A run that should move on but has no job left that would move it."""
    if run.status not in (RunStatus.RUNNING, RunStatus.SUMMARIZING):
        return False
    # One status at a time, so that each lookup is a range of its partial index (queued,
    # running) rather than a walk through the run's finished jobs.
    for status in (JobStatus.QUEUED, JobStatus.RUNNING):
        found = await conn.execute(
            select(jobs.c.id)
            .where(jobs.c.org_id == run.org_id, jobs.c.partition == run.id)
            .where(jobs.c.status == status.value)
            .limit(1)
        )
        if found.first() is not None:
            return False
    return True


async def refresh_report(conn: AsyncConnection, org_id: str, ref: str) -> RunReport:
    """The run's report; a running run with nothing left in the queue gets its finalize job
    (self-healing when the job that should have enqueued it never ran its last step)."""
    report = await run_report(conn, org_id, ref)
    if await _stalled(conn, report.run):
        from valuerank.pipeline.finalize import ensure_finalize  # the rare case only

        await ensure_finalize(conn, report.run)
    return report


async def watch_report(db: Database, org_id: str, ref: str) -> RunReport:
    """`refresh_report` for pollers: a read-only transaction, and a short write one only in
    the rare case the run needs healing. On SQLite a poller that asked for the write lock
    every half second could starve behind busy workers; a reader never waits."""
    async with db.transaction() as conn:
        report = await run_report(conn, org_id, ref)
        stalled = await _stalled(conn, report.run)
    if not stalled:
        return report
    async with db.transaction(immediate=True) as conn:
        return await refresh_report(conn, org_id, report.run.id)
