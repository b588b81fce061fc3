"""A run cancelled while its judges are reading keeps what they read (issue 31, section 3):
`analyze` used to report 0 judged with 6 judgments stored, because the judges' consensus was
only written when the run closed, and a cancelled run never closes. Each judgment now updates
its transcript's consensus as it is written. Real worker, scripted judges, both backends."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import func, select
from tests.waiting import wait_until_async

from valuerank.db import Database
from valuerank.db.tables import jobs, judgments
from valuerank.findings.analyses import run_analysis
from valuerank.pipeline.calls import ProviderPool
from valuerank.pipeline.context import PipelineContext
from valuerank.pipeline.handlers import register_pipeline_handlers
from valuerank.pipeline.judging import run_judge
from valuerank.pipeline.rejudge import judge_run
from valuerank.queue import Job, Worker
from valuerank.runs.kinds import JUDGE
from valuerank.runs.service import cancel_run

from .analysis_support import FAST, JUDGES, launch, run_config, set_up, wait_completed

JUDGED_BEFORE_CANCEL = 6


async def _count(db: Database, query: Any) -> int:
    async with db.transaction() as conn:
        return int(await conn.scalar(query) or 0)


async def test_cancelling_while_judging_keeps_the_judgments_made(db: Database, org_id: str) -> None:
    definition_id = await set_up(db, org_id)
    run_id = await launch(db, org_id, definition_id, run_config(models=("scripted:utilitarian",)))
    ctx = PipelineContext(db, providers=ProviderPool(environ={}), poll_seconds=0.1)
    started = 0
    hold = asyncio.Event()  # never set: judges past the sixth wait until the cancel stops them

    async def some_judges(job: Job) -> Any:
        nonlocal started
        started += 1
        if started > JUDGED_BEFORE_CANCEL:
            await hold.wait()
        return await run_judge(ctx, job)

    worker = Worker(db, settings=FAST, concurrency=2)
    register_pipeline_handlers(worker, ctx)
    worker.register(JUDGE, some_judges)
    task = asyncio.create_task(worker.run_forever())
    stored = select(func.count()).select_from(judgments).where(judgments.c.org_id == org_id)
    try:
        await wait_until_async(
            lambda: _count(db, stored),
            what="six judgments stored",
            done=lambda n: n >= JUDGED_BEFORE_CANCEL,
        )
        async with db.transaction(immediate=True) as conn:
            await cancel_run(conn, org_id, run_id)
        running = (
            select(func.count())
            .select_from(jobs)
            .where(jobs.c.partition == run_id, jobs.c.status == "running")
        )
        await wait_until_async(
            lambda: _count(db, running), what="the held judges stopped", done=lambda n: n == 0
        )
    finally:
        worker.stop()
        await task
        await ctx.aclose()

    judged_transcripts = await _count(
        db,
        select(func.count(func.distinct(judgments.c.transcript_id))).where(
            judgments.c.org_id == org_id
        ),
    )
    assert await _count(db, stored) == JUDGED_BEFORE_CANCEL
    outcome = await run_analysis(db, org_id, run_id)
    meta = outcome.analysis["meta"]
    assert meta["judged"] == judged_transcripts > 0


async def test_judging_again_after_a_cancel_reads_the_rest(db: Database, org_id: str) -> None:
    """`runs judge RUN --judge M` with the run's own judges: their cancelled jobs are enqueued
    again, the judgments already made are kept, and the run closes judged throughout."""
    definition_id = await set_up(db, org_id)
    run_id = await launch(db, org_id, definition_id, run_config(models=("scripted:utilitarian",)))
    ctx = PipelineContext(db, providers=ProviderPool(environ={}), poll_seconds=0.1)
    started = 0
    hold = asyncio.Event()

    async def some_judges(job: Job) -> Any:
        nonlocal started
        started += 1
        if started > JUDGED_BEFORE_CANCEL:
            await hold.wait()
        return await run_judge(ctx, job)

    stored = select(func.count()).select_from(judgments).where(judgments.c.org_id == org_id)
    worker = Worker(db, settings=FAST, concurrency=2)
    register_pipeline_handlers(worker, ctx)
    worker.register(JUDGE, some_judges)
    task = asyncio.create_task(worker.run_forever())
    try:
        await wait_until_async(
            lambda: _count(db, stored), what="six judgments", done=lambda n: n >= 6
        )
        async with db.transaction(immediate=True) as conn:
            await cancel_run(conn, org_id, run_id)
        running = select(func.count()).where(jobs.c.partition == run_id, jobs.c.status == "running")
        await wait_until_async(lambda: _count(db, running), what="stopped", done=lambda n: n == 0)
        first = set(await _ids(db))
        hold.set()  # the judges read normally from now on
        async with db.transaction(immediate=True) as conn:
            again = await judge_run(conn, org_id, run_id, JUDGES, environ={})
        assert again.added == () and again.removed == () and again.enqueued > 0
        await wait_completed(db, org_id, run_id)
    finally:
        worker.stop()
        await task
        await ctx.aclose()
    outcome = await run_analysis(db, org_id, run_id)
    meta = outcome.analysis["meta"]
    assert meta["judged"] == meta["transcripts"]
    assert await _count(db, stored) == len(JUDGES) * meta["transcripts"]
    assert first <= set(await _ids(db))  # the judgments made before the cancel were kept


async def _ids(db: Database) -> list[str]:
    async with db.transaction() as conn:
        return list((await conn.execute(select(judgments.c.id))).scalars())
