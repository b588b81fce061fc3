"""`valuerank runs delete` leaves nothing of the run in the queue's tables, on both backends:
not its own partition's jobs, events and control row, nor those of its analyses'
partition (`analysis:<run id>`), nor the errors of any of those jobs; on the database and
through a server (whose workers run the jobs)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import func, or_, select

from valuerank.db import Database
from valuerank.db.tables import events, job_errors, jobs, queue_controls
from valuerank.runs.partitions import analysis_partition

from .conftest import Invoke
from .runs_both_ways import demo_definition, work_here


@pytest.fixture(autouse=True)
def _no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("VALUERANK_WORKER_POLL_SECONDS", "0.05")


async def _job_ids(db: Database, run_id: str) -> list[str]:
    async with db.transaction() as conn:
        found = await conn.scalars(select(jobs.c.id).where(jobs.c.partition.like(f"%{run_id}%")))
        return list(found)


async def _left(db: Database, run_id: str, job_ids: list[str]) -> dict[str, int]:
    """Rows of the queue's tables that mention the run (partitions named by it, or after it)
    or its jobs (their errors)."""
    mine = f"%{run_id}%"
    async with db.transaction() as conn:
        queries: dict[str, Any] = {
            "jobs": select(func.count()).where(jobs.c.partition.like(mine)),
            "analysis jobs": select(func.count()).where(
                jobs.c.partition == analysis_partition(run_id)
            ),
            "job_errors": select(func.count()).where(job_errors.c.job_id.in_(job_ids)),
            "events": select(func.count()).where(events.c.partition.like(mine)),
            "queue_controls": select(func.count()).where(
                or_(queue_controls.c.key.like(mine), queue_controls.c.key == run_id)
            ),
        }
        return {name: int(await conn.scalar(q) or 0) for name, q in queries.items()}


@pytest.fixture
async def definition(db: Database, org_id: str) -> str:
    return await demo_definition(db, org_id)


@pytest.mark.server_worker
async def test_runs_delete_leaves_nothing_of_the_run_in_the_queue(
    definition: str, cli_both: Invoke, db: Database
) -> None:
    async def call(*args: str) -> Any:
        return await asyncio.to_thread(cli_both, *args)

    created = await call(
        "runs", "create", "--definition", definition,
        "--model", "scripted:utilitarian", "--sample-percentage", "10",
        "--followup-turns", "0", "--json",
    )  # fmt: skip
    assert created.exit_code == 0, created.stderr
    run_id = created.json()["id"]
    waited = await call("runs", "wait", run_id, *work_here(), "--timeout", "60", "--json")
    assert waited.exit_code == 0, waited.stderr
    assert waited.json()["status"] == "completed"

    job_ids = await _job_ids(db, run_id)
    before = await _left(db, run_id, job_ids)
    # The run left rows in both of its partitions: its jobs and its analysis.
    assert before["analysis jobs"] >= 1 and before["jobs"] > before["analysis jobs"]
    assert before["events"] > 0 and before["queue_controls"] == 2

    deleted = await call("runs", "delete", run_id, "--json")
    assert deleted.exit_code == 0, deleted.stderr
    assert deleted.json() == {"id": run_id, "deleted": True}
    assert await _left(db, run_id, job_ids) == {
        "jobs": 0,
        "analysis jobs": 0,
        "job_errors": 0,
        "events": 0,
        "queue_controls": 0,
    }
