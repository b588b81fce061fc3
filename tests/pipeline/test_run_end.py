"""A run's end through its one owner (`pipeline/run_end.py`): the tail enqueues the run's
finalize job once per generation, whichever path asks; a cancelled run is never healed,
reaped or closed afterwards, even by a closer that read it while it was running (the cancel
race at the run's end). Real rows, both backends."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from valuerank.db import Database
from valuerank.db.tables import jobs, runs
from valuerank.pipeline.run_end import (
    close_run,
    finalize_at_tail,
    move_on_at_tail,
    reap_stale_run,
    stalled,
)
from valuerank.pipeline.run_results import store_consensus
from valuerank.runs.kinds import FINALIZE
from valuerank.runs.partitions import analysis_partition
from valuerank.runs.service import cancel_run, get_run
from valuerank.runs.states import RunStatus


async def _finalize_jobs(db: Database, run_id: str) -> list[tuple[str, str]]:
    async with db.transaction() as conn:
        found = await conn.execute(
            select(jobs.c.item_key, jobs.c.status).where(
                jobs.c.partition == run_id, jobs.c.kind == FINALIZE
            )
        )
        return [(row.item_key, row.status) for row in found]


async def test_the_tail_enqueues_the_finalize_job_once_whoever_asks(
    db: Database, org_id: str, stale_run: Any
) -> None:
    run_id = await stale_run(org_id, write=True)  # every probe done: the run is at its tail

    assert await move_on_at_tail(db, org_id, run_id)  # a last failed attempt, a reused transcript
    assert not await move_on_at_tail(db, org_id, run_id)
    async with db.transaction(immediate=True) as conn:  # a probe writing its transcript
        assert not await finalize_at_tail(conn, await get_run(conn, org_id, run_id))
        assert not await stalled(conn, await get_run(conn, org_id, run_id))

    assert await _finalize_jobs(db, run_id) == [(f"{FINALIZE}:0", "queued")]


async def test_a_cancelled_run_is_never_healed_reaped_or_closed(
    db: Database, org_id: str, stale_run: Any
) -> None:
    run_id = await stale_run(org_id, write=True)
    async with db.transaction(immediate=True) as conn:
        seen_running = await get_run(conn, org_id, run_id)  # a closer's look before the cancel
        await cancel_run(conn, org_id, run_id)
        cancelled = await get_run(conn, org_id, run_id)

        assert not await stalled(conn, cancelled)
        assert await reap_stale_run(conn, org_id, run_id) is None
        results = await store_consensus(conn, seen_running)
        target, moved = await close_run(conn, seen_running, results, "a late summary")

    assert (target, moved) == (RunStatus.COMPLETED, False)
    async with db.transaction() as conn:
        run = await get_run(conn, org_id, run_id)
        summary = await conn.scalar(select(runs.c.summary).where(runs.c.id == run_id))
        analyses = await conn.scalar(
            select(jobs.c.id).where(jobs.c.partition == analysis_partition(run_id)).limit(1)
        )
    assert run.status is RunStatus.CANCELLED and summary is None and analyses is None
    assert await _finalize_jobs(db, run_id) == []
