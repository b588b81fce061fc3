"""A run cancelled while a probe is running (issue 21, item 9): the probe finishes after the
cancel, writes its transcript and enqueues the run's finalize job (it is at the tail). That
job used to stay queued forever in the cancelled partition, growing `queue_length` and
`oldest_waiting_seconds`; now a job enqueued into a cancelled partition is cancelled at once.
Real worker, the pipeline's own probe step, both backends."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from sqlalchemy import func, select, text
from tests.waiting import wait_until_async

import valuerank
from valuerank.db import Database
from valuerank.db.tables import jobs, transcripts
from valuerank.definitions.service import import_definition
from valuerank.pipeline.calls import ProviderPool
from valuerank.pipeline.context import PipelineContext
from valuerank.pipeline.handlers import register_pipeline_handlers
from valuerank.pipeline.probe import run_probe
from valuerank.queue import Job, JobSpec, QueueSettings, Worker, enqueue, queue_status
from valuerank.runs.config import RunConfig
from valuerank.runs.kinds import FINALIZE, PROBE
from valuerank.runs.service import cancel_run, create_run, start_run

DEMO = Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md"
# A slow heartbeat: the worker must not see the cancel (and stop the handler) before the
# probe has finished, which is the race being reproduced.
SLOW_BEAT = QueueSettings(poll_seconds=0.02, heartbeat_seconds=30, burst_wait_seconds=0)


async def _blocked_behind(db: Database, pid: int) -> None:
    """Until a session waits for a lock that the session `pid` holds (here: the cancel,
    after its first sweep, waiting for the partition row)."""

    async def waiting() -> int:
        async with db.engine.connect() as other:
            found = await other.scalar(
                text(
                    "SELECT count(*) FROM pg_stat_activity WHERE :pid = ANY(pg_blocking_pids(pid))"
                ),
                {"pid": pid},
            )
            return int(found or 0)

    await wait_until_async(waiting, what=f"a session blocked behind backend {pid}")


async def _started_run(db: Database, org_id: str) -> str:
    async with db.transaction(immediate=True) as conn:
        stored, _ = await import_definition(conn, org_id, DEMO.read_text())
        config = RunConfig(models=("scripted:utilitarian",), sample_percentage=10, sample_seed=0)
        created = await create_run(conn, org_id, stored.version.id, config)
        await start_run(conn, org_id, created.run.id)
    return created.run.id


async def _by_kind_status(db: Database, run_id: str) -> dict[tuple[str, str], int]:
    async with db.transaction() as conn:
        rows = await conn.execute(
            select(jobs.c.kind, jobs.c.status, func.count())
            .where(jobs.c.partition == run_id)
            .group_by(jobs.c.kind, jobs.c.status)
        )
        return {(kind, status): int(n) for kind, status, n in rows}


async def test_a_probe_finishing_after_cancel_leaves_nothing_queued(
    db: Database, org_id: str
) -> None:
    run_id = await _started_run(db, org_id)
    in_handler, cancelled = asyncio.Event(), asyncio.Event()
    ctx = PipelineContext(db, providers=ProviderPool(environ={}), poll_seconds=0.1)

    async def late_probe(job: Job) -> Any:
        in_handler.set()
        await cancelled.wait()  # the run is cancelled while this probe is running
        return await run_probe(ctx, job)

    worker = Worker(db, settings=SLOW_BEAT, concurrency=1)
    register_pipeline_handlers(worker, ctx)
    worker.register(PROBE, late_probe)
    task = asyncio.create_task(worker.run_forever())
    try:
        await asyncio.wait_for(in_handler.wait(), 30)
        async with db.transaction(immediate=True) as conn:
            await cancel_run(conn, org_id, run_id)
        cancelled.set()
        await wait_until_async(
            lambda: _by_kind_status(db, run_id),
            what="the late probe to settle",
            done=lambda counts: not counts.get((PROBE, "running")),
        )
    finally:
        worker.stop()
        await task
        await ctx.aclose()

    counts = await _by_kind_status(db, run_id)
    async with db.transaction() as conn:
        written = await conn.scalar(
            select(func.count()).select_from(transcripts).where(transcripts.c.run_id == run_id)
        )
        status = await queue_status(conn, org_id=org_id)
    assert written == 1  # the late probe did finish and write its transcript
    assert counts[(PROBE, "succeeded")] == 1
    assert counts.get((FINALIZE, "cancelled")) == 1, counts  # enqueued, cancelled at once
    assert not any(s in ("queued", "running") for _, s in counts), counts
    assert status.counts["queued"] == 0 and status.oldest_waiting_seconds is None
    assert run_id not in status.partitions  # not a live partition any more


async def test_a_job_enqueued_into_a_cancelled_partition_is_cancelled_at_once(
    db: Database, org_id: str
) -> None:
    """The queue's rule itself, for any partition; its counters count the job as cancelled."""
    from valuerank.queue import cancel_partition, resume_partition
    from valuerank.queue.events import recount_partition

    def spec(key: str) -> JobSpec:
        return JobSpec(kind="echo", org_id=org_id, partition="p-1", item_key=key)

    async with db.transaction(immediate=True) as conn:
        await enqueue(conn, spec("before"))
        await cancel_partition(conn, org_id, "p-1")
    async with db.transaction(immediate=True) as conn:
        late = await enqueue(conn, spec("late"))
    async with db.transaction(immediate=True) as conn:
        again = await enqueue(conn, spec("late"))  # idempotent: the same, cancelled job
        status = await conn.scalar(select(jobs.c.status).where(jobs.c.id == late.job_id))
        counters, corrected = await recount_partition(conn, org_id, "p-1")
    assert late.enqueued and not again.enqueued and again.job_id == late.job_id
    assert status == "cancelled"
    assert counters.counts["queued"] == 0 and counters.counts["cancelled"] == 2
    assert not corrected  # the counters had counted the late job as cancelled
    # Resumed, the partition takes new jobs again.
    async with db.transaction(immediate=True) as conn:
        await resume_partition(conn, org_id, "p-1")
        after = await enqueue(conn, spec("after"))
        status = await conn.scalar(select(jobs.c.status).where(jobs.c.id == after.job_id))
    assert status == "queued"


async def test_a_job_enqueued_while_the_cancel_runs_is_cancelled_too(
    db: Database, org_id: str
) -> None:
    """The other order of the race: the enqueue holds the partition row (it saw no cancel)
    while the cancel's first sweep runs, and commits before the cancel sets its flag. The
    cancel sweeps again once it holds the row (on SQLite the two simply take turns)."""
    from valuerank.queue import cancel_partition

    def spec(key: str) -> JobSpec:
        return JobSpec(kind="echo", org_id=org_id, partition="p-2", item_key=key)

    async with db.transaction(immediate=True) as conn:
        await enqueue(conn, spec("first"))

    async def cancel() -> None:
        async with db.transaction(immediate=True) as conn:
            await cancel_partition(conn, org_id, "p-2")

    async with db.transaction(immediate=True) as conn:
        late = await enqueue(conn, spec("late"))  # not committed: holds the partition row
        cancelling = asyncio.create_task(cancel())
        if db.url.dialect == "postgresql":  # SQLite: the cancel waits its turn whatever
            await _blocked_behind(db, await conn.scalar(text("SELECT pg_backend_pid()")))
    await asyncio.wait_for(cancelling, 30)
    async with db.transaction() as conn:
        status = await conn.scalar(select(jobs.c.status).where(jobs.c.id == late.job_id))
    assert status == "cancelled"
