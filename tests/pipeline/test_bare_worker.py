"""A worker built in a fresh interpreter that imports only the worker's entry point
(`valuerank.cli.worker_cmd`) runs every queue hook of a run, on SQLite and PostgreSQL: the
run's partition ends with `run_complete` (not `partition_complete`), webhooks get a step's
job events as `job_*` and a run's end under an old subscription's name, and the jobs that
maintenance prunes leave their counts and failures on the run. The hooks are given to the
worker, so nothing depends on what the process happened to import."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from sqlalchemy import func, select
from tests.api.test_run_event_names import _topics
from tests.conftest import TestDatabase

from valuerank.db import Database
from valuerank.db.tables import jobs, runs
from valuerank.pipeline.launch import launch_run
from valuerank.queue import events_after
from valuerank.queue.outbox import register_webhook
from valuerank.runs.config import RunConfig

from .test_end_to_end import _definition

HOOK = "https://hooks.example.com/"  # never called: the outbox rows are what is checked

WORKER = """
import asyncio, json, sys
from valuerank.cli import worker_cmd

async def main():
    db = worker_cmd.configured_database(worker_cmd.get_settings())
    try:
        worker, ctx = worker_cmd.build_worker(db, worker_cmd.worker_settings(), concurrency=2)
        try:
            stats = await worker.run_until_idle()
            await asyncio.sleep(0.5)  # past the retention: the run's jobs can be pruned
            await worker.maintain()
        finally:
            await ctx.aclose()
    finally:
        await db.dispose()
    print(json.dumps({"succeeded": stats.succeeded, "failed": stats.failed}))

asyncio.run(main())
"""


async def test_a_worker_from_a_bare_import_runs_every_hook_of_a_run(
    db: Database, org_id: str, database_url: TestDatabase
) -> None:
    definition = await _definition(db, org_id)
    config = RunConfig(
        models=("scripted:utilitarian",),
        judge_models=("scripted:centrist",),
        sample_percentage=10,
    )
    async with db.transaction(immediate=True) as conn:
        steps = await register_webhook(conn, org_id, HOOK, event_types=["job_complete"])
        ends = await register_webhook(conn, org_id, HOOK, event_types=["partition_complete"])
        launched = await launch_run(conn, org_id, definition, config, environ={})
    run_id = launched.created.run.id

    env = {
        **os.environ,
        "VALUERANK_DATABASE_URL": database_url.url,
        "VALUERANK_WORKER_POLL_SECONDS": "0.02",
        "VALUERANK_WORKER_HEARTBEAT_SECONDS": "0.05",
        "VALUERANK_WORKER_RETENTION_DAYS": "0.000001",  # about 0.09 s
    }
    done = subprocess.run(
        [sys.executable, "-c", WORKER], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout.strip().splitlines()[-1])
    assert stats["succeeded"] > 0 and stats["failed"] == 0

    async with db.transaction() as conn:
        log = await events_after(conn, run_id, 0, 10_000, org_id=org_id)
        left = await conn.scalar(select(func.count()).where(jobs.c.partition == run_id))
        pruned = await conn.scalar(select(runs.c.pruned_jobs).where(runs.c.id == run_id))
    # The completion namer: the run's partition ends with the run's own event and status.
    assert log[-1].type == "run_complete" and log[-1].data["status"] == "completed"
    assert not [e for e in log if e.type == "partition_complete"]
    # The publisher: a step's job events reach webhooks as `job_*`, without job counts.
    step_hooks = await _topics(db, steps.id)
    assert {p["data"]["kind"] for _, p in step_hooks} >= {"judge", "finalize"}
    assert all("counts" not in p["data"] for _, p in step_hooks)
    # The topic aliases: subscribed under the old name, the run's end still arrives.
    [(topic, end)] = [(t, p) for t, p in await _topics(db, ends.id) if p["partition"] == run_id]
    assert topic == "run_complete" and end["data"]["status"] == "completed"
    # The pruned-job observer: the run's jobs are gone, their counts kept on the run.
    assert left == 0 and pruned is not None
    assert pruned["probe"] == {"succeeded": launched.created.jobs_planned}
    assert set(pruned) == {"probe", "judge", "finalize"}
