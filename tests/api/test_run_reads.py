"""Reading a run writes nothing: its status and detail (`GET /api/runs/{id}`,
`/api/queue/runs/{id}`, `/api/eval/runs/{id}`, `valuerank runs status`) are read in one
snapshot, and a stalled run (running, nothing queued or running: as when a probe's last attempt
is reaped) is left as it is by its readers. The workers' maintenance moves it on, as before
its readers did. Real app, real rows, both backends."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from valuerank.db import Database
from valuerank.db.tables import events, jobs, runs
from valuerank.pipeline.context import PipelineContext
from valuerank.pipeline.handlers import register_pipeline_handlers
from valuerank.queue import QueueSettings, Worker

from .conftest import Live


async def _state(db: Database, run_id: str) -> tuple[Any, ...]:
    """Everything a healing read used to write: the run's row, its jobs and its events."""
    async with db.transaction() as conn:
        row = (await conn.execute(select(runs).where(runs.c.id == run_id))).one()
        job_rows = (
            await conn.execute(
                select(jobs.c.id, jobs.c.kind, jobs.c.status).where(jobs.c.partition == run_id)
            )
        ).all()
        n_events = await conn.scalar(
            select(func.count()).select_from(events).where(events.c.partition == run_id)
        )
    return tuple(row), sorted(tuple(j) for j in job_rows), n_events


async def test_reading_a_stalled_run_writes_nothing_and_maintenance_moves_it_on(
    live: Live, stale_run: Any
) -> None:
    run_id = await stale_run(live.org_id, write=True)
    before = await _state(live.db, run_id)
    async with live.client() as client:
        for path in (
            f"/api/runs/{run_id}",
            f"/api/queue/runs/{run_id}",
            f"/api/eval/runs/{run_id}",
        ):
            answer = await client.get(path)
            assert answer.status_code == 200, answer.text
            assert answer.json()["data"]["status"] == "running", path
    assert await _state(live.db, run_id) == before  # no finalize job, no event, no move

    # The workers' periodic maintenance pass (the chores the pipeline gives every worker).
    worker = Worker(live.db, settings=QueueSettings())
    ctx = PipelineContext(live.db)
    register_pipeline_handlers(worker, ctx)
    try:
        record = await worker.maintain()
    finally:
        await ctx.aclose()
    assert record is not None and record.actions["stale_runs"]["completed"] == 1
    async with live.client() as client:
        detail = (await client.get(f"/api/runs/{run_id}")).json()["data"]
    assert detail["status"] == "completed"
    assert [r["model"] for r in detail["results"]] == ["scripted:utilitarian"]
