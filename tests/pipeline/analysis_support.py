"""Helpers of the analysis end-to-end tests: scripted personas with judges, a real
in-process worker, and waiting for what it does."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from tests.waiting import run_report_when, wait_until_async

import valuerank
from valuerank.db import Database
from valuerank.definitions.service import import_definition
from valuerank.findings.analyses import stored_analysis
from valuerank.pipeline.calls import ProviderPool
from valuerank.pipeline.context import PipelineContext
from valuerank.pipeline.handlers import register_pipeline_handlers
from valuerank.pipeline.launch import launch_run
from valuerank.queue import QueueSettings, Worker
from valuerank.queue.partitions import has_running_jobs
from valuerank.rubrics import import_rubric
from valuerank.runs.config import RunConfig
from valuerank.runs.service import get_run
from valuerank.runs.states import RunStatus

DEMO = Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md"
RUBRIC = Path(__file__).parents[2] / "examples" / "values_rubric.yaml"
FAST = QueueSettings(poll_seconds=0.02, heartbeat_seconds=0.05, retry_base_seconds=0.0)
PERSONAS = (
    "scripted:utilitarian",
    "scripted:contrarian",
    "scripted:deontologist",
    "scripted:refuser",
)
JUDGES = ("scripted:centrist", "scripted:utilitarian")


@contextlib.asynccontextmanager
async def running_worker(db: Database) -> AsyncIterator[None]:
    worker = Worker(db, settings=FAST, concurrency=4)
    ctx = PipelineContext(db, providers=ProviderPool(environ={}), poll_seconds=0.1)
    register_pipeline_handlers(worker, ctx)
    task = asyncio.create_task(worker.run_forever())
    try:
        yield
    finally:
        worker.stop()
        await task
        await ctx.aclose()


async def set_up(db: Database, org_id: str) -> str:
    async with db.transaction() as conn:
        await import_rubric(conn, org_id, RUBRIC.read_text(), name="values")
        stored, _ = await import_definition(conn, org_id, DEMO.read_text(), source_file=DEMO.name)
    return stored.version.id


async def launch(db: Database, org_id: str, definition_id: str, config: RunConfig) -> str:
    async with db.transaction() as conn:
        launched = await launch_run(conn, org_id, definition_id, config, environ={})
    return launched.created.run.id


async def wait_completed(db: Database, org_id: str, run_id: str) -> None:
    """The run completed and its worker let go of every job (the job that completes a run
    is settled just after: judging it again meanwhile is refused as 'jobs are stopping')."""
    await run_report_when(db, org_id, run_id)
    async with db.transaction() as conn:
        assert (await get_run(conn, org_id, run_id)).status is RunStatus.COMPLETED

    async def settled() -> bool:
        async with db.transaction() as conn:
            return not await has_running_jobs(conn, run_id, org_id=org_id)

    await wait_until_async(settled, what=f"run {run_id}'s jobs settled")


async def wait_stored(db: Database, org_id: str, run_id: str, kind: str) -> Any:
    async def found() -> Any:
        async with db.transaction() as conn:
            return await stored_analysis(conn, org_id, run_id, kind)  # type: ignore[arg-type]

    return await wait_until_async(found, what=f"the {kind} analysis of run {run_id} stored")


def run_config(models: tuple[str, ...] = PERSONAS, **extra: Any) -> RunConfig:
    return RunConfig(
        models=models,
        sample_percentage=30,
        sample_seed=0,  # runs to pair sample the same scenarios
        followup_turns=0,
        judge_models=JUDGES,
        **extra,
    )
