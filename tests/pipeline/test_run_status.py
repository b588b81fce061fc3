"""A run's status heals a stalled run: a running run with nothing left in its queue gets its
finalize job from whoever reads its status (`runs status`, pollers), once; a run with live
jobs is only read. (The finalize step loads only in that branch.)"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from valuerank.db import Database
from valuerank.db.tables import jobs
from valuerank.pipeline.run_status import refresh_report, watch_report
from valuerank.refs import short_id
from valuerank.runs.kinds import FINALIZE
from valuerank.runs.states import RunStatus


async def _finalize_jobs(db: Database, run_id: str) -> list[str]:
    async with db.transaction() as conn:
        found = await conn.execute(
            select(jobs.c.status).where(jobs.c.partition == run_id, jobs.c.kind == FINALIZE)
        )
        return [row.status for row in found]


async def test_a_stalled_run_gets_its_finalize_job_from_its_readers(
    db: Database, org_id: str, stale_run: Any
) -> None:
    run_id = await stale_run(org_id, write=True)
    assert await _finalize_jobs(db, run_id) == []

    report = await watch_report(db, org_id, run_id)

    assert report.run.id == run_id and report.run.status is RunStatus.RUNNING
    assert await _finalize_jobs(db, run_id) == ["queued"]
    # Its finalize job is queued now: the run is no longer stalled and nothing more is added.
    async with db.transaction(immediate=True) as conn:
        await refresh_report(conn, org_id, short_id(run_id))
    assert await _finalize_jobs(db, run_id) == ["queued"]


async def test_refresh_report_heals_in_the_callers_transaction(
    db: Database, org_id: str, stale_run: Any
) -> None:
    run_id = await stale_run(org_id, write=False)

    async with db.transaction(immediate=True) as conn:
        report = await refresh_report(conn, org_id, run_id)

    assert report.run.id == run_id
    assert await _finalize_jobs(db, run_id) == ["queued"]
