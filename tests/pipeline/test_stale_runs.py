"""Stale-run reaping (issue 9, item 4): a run left `running` with no job queued or running is
moved by maintenance to the state the finalize rule gives it, with one `run_reaped`
event; a run with a live job is left alone; passes at once reap once. Real rows, real
workers, both backends."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import select

from valuerank.db import Database
from valuerank.db.tables import jobs, runs
from valuerank.orgs import ensure_org
from valuerank.pipeline.context import PipelineContext
from valuerank.pipeline.handlers import register_pipeline_handlers
from valuerank.pipeline.maintenance import Retention, maintain, reap_stale_runs_pass
from valuerank.queue import QueueSettings, Worker, claim, events_after
from valuerank.queue.maintenance import MaintenanceRun
from valuerank.runs.kinds import FINALIZE
from valuerank.runs.service import get_run, pause_run
from valuerank.runs.states import RunStatus, move_run

SETTINGS = QueueSettings()


async def _status(db: Database, org_id: str, run_id: str) -> RunStatus:
    async with db.transaction() as conn:
        return (await get_run(conn, org_id, run_id)).status


async def _reaped_events(db: Database, run_id: str) -> list[dict[str, Any]]:
    async with db.transaction() as conn:
        found = await events_after(conn, run_id, 0, 10_000)
    return [e.data for e in found if str(e.type) == "run_reaped"]


def _stale(record: MaintenanceRun | None) -> dict[str, Any]:
    assert record is not None and record.status == "succeeded", record
    stale: dict[str, Any] = record.actions["stale_runs"]
    return stale


async def test_a_run_whose_probes_all_succeeded_is_completed(
    db: Database, org_id: str, stale_run: Any
) -> None:
    run_id = await stale_run(org_id, write=True)
    assert await _status(db, org_id, run_id) is RunStatus.RUNNING

    stale = _stale(await maintain(db, SETTINGS, Retention(), trigger="cli"))

    assert (stale["reaped"], stale["completed"], stale["failed"], stale["resumed"]) == (1, 1, 0, 0)
    assert stale["runs"] == [{"run_id": run_id, "from": "running", "outcome": "completed"}]
    async with db.transaction() as conn:
        run = await get_run(conn, org_id, run_id)
        summary = await conn.scalar(select(runs.c.summary).where(runs.c.id == run_id))
    assert run.status is RunStatus.COMPLETED and run.error is None and run.finished_at
    assert summary and "scripted:utilitarian" in summary  # the finalize rule's plain summary
    [event] = await _reaped_events(db, run_id)
    assert event["status"] == "completed" and event["previous_status"] == "running"
    assert event["probes"]["completed"] == event["probes"]["total"] > 0
    # Nothing left to reap: a second pass finds nothing and writes no event.
    assert _stale(await maintain(db, SETTINGS, Retention(), trigger="cli"))["reaped"] == 0
    assert len(await _reaped_events(db, run_id)) == 1


async def test_a_run_whose_probes_all_failed_fails_with_the_reason(
    db: Database, org_id: str, stale_run: Any
) -> None:
    run_id = await stale_run(org_id, write=False)

    stale = _stale(await maintain(db, SETTINGS, Retention(), trigger="cli"))

    assert (stale["reaped"], stale["failed"], stale["completed"]) == (1, 1, 0)
    async with db.transaction() as conn:
        run = await get_run(conn, org_id, run_id)
    assert run.status is RunStatus.FAILED
    assert run.error and "every probe job failed" in run.error
    assert "scripted outage: no answer" in run.error
    [event] = await _reaped_events(db, run_id)
    assert event["status"] == "failed" and event["error"] == run.error


async def test_a_stale_summarizing_run_is_closed_too(
    db: Database, org_id: str, stale_run: Any
) -> None:
    run_id = await stale_run(org_id, write=True)
    async with db.transaction() as conn:
        assert await move_run(conn, org_id, run_id, RunStatus.SUMMARIZING)
    done = await reap_stale_runs_pass(db, trigger="api")
    assert done.kind == "reap_stale_runs" and done.trigger == "api"
    assert done.actions["stale_runs"]["completed"] == 1
    assert await _status(db, org_id, run_id) is RunStatus.COMPLETED
    [event] = await _reaped_events(db, run_id)
    assert event["previous_status"] == "summarizing"


async def test_runs_with_a_live_job_or_paused_are_not_touched(
    db: Database, org_id: str, stale_run: Any
) -> None:
    stale_id = await stale_run(org_id, write=True)
    # A run whose jobs are queued, one whose job is running, one paused with queued jobs.
    queued_id = await stale_run(org_id, write=True)
    running_id = await stale_run(org_id, write=True)
    paused_id = await stale_run(org_id, write=True)
    async with db.transaction(immediate=True) as conn:
        for run_id in (queued_id, running_id, paused_id):
            await conn.execute(
                jobs.update()
                .where(jobs.c.partition == run_id, jobs.c.kind == "probe")
                .values(status="queued", lease_token=None, lease_expires_at=None)
            )
        await pause_run(conn, org_id, paused_id)
    # Claim one job for real: its lease is fresh, so the reaper leaves it running.
    async with db.transaction(immediate=True) as conn:
        await conn.execute(
            jobs.update().where(jobs.c.partition != running_id).values(priority=-100)
        )
    [claimed] = await claim(db, worker_id="w-live", limit=1, settings=SETTINGS)
    assert claimed.partition == running_id

    stale = _stale(await maintain(db, SETTINGS, Retention(), trigger="cli"))

    assert stale["reaped"] == 1 and [r["run_id"] for r in stale["runs"]] == [stale_id]
    assert await _status(db, org_id, stale_id) is RunStatus.COMPLETED
    assert await _status(db, org_id, queued_id) is RunStatus.RUNNING
    assert await _status(db, org_id, running_id) is RunStatus.RUNNING
    assert await _status(db, org_id, paused_id) is RunStatus.PAUSED
    for untouched in (queued_id, running_id, paused_id):
        assert await _reaped_events(db, untouched) == []


async def test_two_passes_at_once_reap_each_run_once(
    db: Database, org_id: str, stale_run: Any
) -> None:
    first = await stale_run(org_id, write=True)
    other_org = await _other_org(db)
    second = await stale_run(other_org, write=False)  # maintenance is install-wide

    records = await asyncio.gather(
        maintain(db, SETTINGS, Retention(), trigger="cli", wait=False),
        maintain(db, SETTINGS, Retention(), trigger="worker", wait=True),
        reap_stale_runs_pass(db, trigger="api"),
        reap_stale_runs_pass(db, trigger="api"),
    )

    reaped = [r["run_id"] for rec in records if rec is not None for r in _stale(rec)["runs"]]
    assert sorted(reaped) == sorted([first, second])
    assert len(await _reaped_events(db, first)) == 1
    assert len(await _reaped_events(db, second)) == 1
    assert await _status(db, org_id, first) is RunStatus.COMPLETED
    assert await _status(db, other_org, second) is RunStatus.FAILED


async def _other_org(db: Database) -> str:
    async with db.transaction() as conn:
        return await ensure_org(conn, "other")


async def test_a_run_still_owing_judging_gets_its_finalize_job_back(
    db: Database, org_id: str, stale_run: Any
) -> None:
    run_id = await stale_run(org_id, write=True, judges=("scripted:judge",))

    stale = _stale(await maintain(db, SETTINGS, Retention(), trigger="cli"))

    assert (stale["resumed"], stale["reaped"]) == (1, 0)
    assert await _status(db, org_id, run_id) is RunStatus.RUNNING
    async with db.transaction() as conn:
        finalize = (
            await conn.execute(
                select(jobs.c.status).where(jobs.c.partition == run_id, jobs.c.kind == FINALIZE)
            )
        ).all()
    assert [f.status for f in finalize] == ["queued"]
    assert await _reaped_events(db, run_id) == []
    # Its finalize job is live now: the next pass leaves the run alone.
    assert _stale(await maintain(db, SETTINGS, Retention(), trigger="cli"))["resumed"] == 0


async def test_the_workers_periodic_pass_reaps_stale_runs(
    db: Database, org_id: str, stale_run: Any
) -> None:
    run_id = await stale_run(org_id, write=False)
    worker = Worker(db, settings=SETTINGS)
    ctx = PipelineContext(db)
    register_pipeline_handlers(worker, ctx)
    try:
        record = await worker.maintain()
    finally:
        await ctx.aclose()
    assert record is not None and record.trigger == "worker" and record.kind == "full"
    assert _stale(record)["failed"] == 1
    assert await _status(db, org_id, run_id) is RunStatus.FAILED


async def test_a_pending_run_is_not_stale(db: Database, org_id: str, stale_run: Any) -> None:
    run_id = await stale_run(org_id, write=True)
    async with db.transaction(immediate=True) as conn:
        await conn.execute(runs.update().where(runs.c.id == run_id).values(status="pending"))
    assert _stale(await maintain(db, SETTINGS, Retention(), trigger="cli"))["reaped"] == 0
    assert await _status(db, org_id, run_id) is RunStatus.PENDING
