"""A finished run keeps its progress and failures when maintenance prunes its jobs (past the
30-day job retention), on SQLite and PostgreSQL: `GET /api/runs/{id}`, its failure pages and
`runs status --json` read the same before and after; a run reopened after pruning counts each
job once (its live failed jobs run again, its pruned failures stay failures)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Collection, Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select, update
from tests.waiting import run_report_when
from tests.web.test_runs_pages import FAILING, UTIL, demo_definition, launch
from tests.web.test_runs_pages import worker as pipeline_worker
from typer.testing import CliRunner

from valuerank.cli import app
from valuerank.config import get_settings
from valuerank.db import Database
from valuerank.db.tables import jobs
from valuerank.queue.dialect import db_now_plus
from valuerank.queue.hooks import using
from valuerank.queue.maintenance_history import prune_jobs_pass
from valuerank.runs import service
from valuerank.runs.hooks import RUN_HOOKS
from valuerank.shapes import dump

DAY = 86400.0

Status = Callable[[str], dict[str, Any]]


@pytest.fixture
def cli_status(database_url: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Status]:
    """`valuerank runs status RUN --json` against the test's database, as a user runs it."""
    monkeypatch.setenv("VALUERANK_DATABASE_URL", database_url.url)
    monkeypatch.delenv("VALUERANK_API_URL", raising=False)

    def status(run_id: str) -> dict[str, Any]:
        get_settings.cache_clear()
        result = CliRunner().invoke(app, ["runs", "status", run_id, "--json"])
        assert result.exit_code == 0, result.stderr
        found: dict[str, Any] = json.loads(result.stdout)
        return found

    yield status
    get_settings.cache_clear()


async def _finished_run(db: Database, org_id: str) -> str:
    """A run of 4 probes run by a real worker: 2 succeed, 2 fail (every call errs)."""
    definition = await demo_definition(db, org_id)
    run = await launch(
        db, org_id, definition, start=False, models=(UTIL, FAILING), sample_percentage=10
    )
    async with db.transaction(immediate=True) as conn:
        await service.start_run(conn, org_id, run.id)
    async with pipeline_worker(db):
        report = await run_report_when(db, org_id, run.id)
    assert (report.progress.completed, report.progress.failed) == (2, 2)
    return run.id


async def _age(
    db: Database, run_id: str, *, days: float, keep: Collection[str] = frozenset()
) -> None:
    """The run's jobs (but `keep`) finished `days` ago: past the retention."""
    async with db.transaction(immediate=True) as conn:
        ago = db_now_plus(conn.dialect.name, -days * DAY)
        await conn.execute(
            update(jobs)
            .where(jobs.c.partition == run_id, jobs.c.id.not_in(keep))
            .values(finished_at=ago)
        )


async def _prune(db: Database) -> int:
    """Maintenance's job pruning, in small batches (each adds to what the last one kept),
    with the runs' hooks, as the CLI and the workers run it."""
    total = 0
    while True:
        with using(RUN_HOOKS):
            done = await prune_jobs_pass(db, retention_days=30, batch=2, trigger="cli")
        assert done.status == "succeeded", done
        total += int(done.actions["pruned_jobs"])
        if not done.actions["more"]:
            return total


async def _jobs_left(db: Database, run_id: str) -> int:
    async with db.transaction() as conn:
        n = await conn.scalar(select(func.count()).where(jobs.c.partition == run_id))
    return int(n or 0)


async def _failure_pages(client: httpx.AsyncClient, run_id: str) -> list[dict[str, Any]]:
    """Every page of the run's failures, one failure a page (the cursor crosses live and
    pruned rows alike)."""
    pages: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": 1} | ({"cursor": cursor} if cursor else {})
        answer = await client.get(f"/api/runs/{run_id}/failures", params=params)
        assert answer.status_code == 200, answer.text
        pages.append(answer.json()["data"])
        cursor = pages[-1]["next_cursor"]
        if cursor is None:
            return pages


async def _seen(client: httpx.AsyncClient, cli_status: Status, run_id: str) -> dict[str, Any]:
    detail = await client.get(f"/api/runs/{run_id}")
    assert detail.status_code == 200, detail.text
    return {
        "detail": detail.json()["data"],
        "failures": await _failure_pages(client, run_id),
        "cli": await asyncio.to_thread(cli_status, run_id),
    }


async def test_a_finished_runs_progress_and_failures_survive_pruning(
    live: Any, db: Database, org_id: str, cli_status: Status
) -> None:
    run_id = await _finished_run(db, org_id)
    await _age(db, run_id, days=29)
    assert await _prune(db) == 0  # not past the retention yet
    await _age(db, run_id, days=31)  # before reading: the failures show when they finished
    async with live.client_for("default", "member") as client:
        before = await _seen(client, cli_status, run_id)
        assert before["detail"]["progress"] == {
            "total": 4, "queued": 0, "running": 0, "completed": 2, "failed": 2, "cancelled": 0,
        }  # fmt: skip
        assert before["cli"]["progress"] == before["detail"]["progress"]
        assert [len(p["failures"]) for p in before["failures"]] == [1, 1]
        assert before["failures"][0]["failures"][0]["error"]

        assert await _prune(db) >= 5  # 4 probes and the finalize job
        assert await _jobs_left(db, run_id) == 0

        assert await _seen(client, cli_status, run_id) == before
        # Nothing to send back: a pruned job is gone; the run stays as it ended.
        rerun = (await client.post(f"/api/runs/{run_id}/rerun-failed")).json()["data"]
        assert rerun["requeued"] == 0 and rerun["status"] == before["detail"]["status"]
        assert await _seen(client, cli_status, run_id) == before


async def test_a_run_reopened_after_pruning_counts_each_job_once(
    live: Any, db: Database, org_id: str, cli_status: Status
) -> None:
    run_id = await _finished_run(db, org_id)
    async with db.transaction() as conn:
        failed = list(
            (
                await conn.execute(
                    select(jobs.c.id)
                    .where(jobs.c.partition == run_id, jobs.c.status == "failed")
                    .order_by(jobs.c.id)
                )
            ).scalars()
        )
    # One failed probe is pruned with the rest; the other is still stored.
    await _age(db, run_id, days=31, keep={failed[1]})
    async with live.client_for("default", "member") as client:
        kept = await _seen(client, cli_status, run_id)
        await _prune(db)
        assert await _jobs_left(db, run_id) == 1
        assert await _seen(client, cli_status, run_id) == kept
        assert kept["detail"]["progress"]["failed"] == 2
        assert kept["detail"]["progress"]["total"] == 4

        rerun = (await client.post(f"/api/runs/{run_id}/rerun-failed")).json()["data"]
        assert rerun["requeued"] == 1 and rerun["status"] == "running"
        reopened = await _seen(client, cli_status, run_id)
        # The requeued job counts as queued, not also as failed; the pruned one stays failed.
        assert reopened["detail"]["progress"] == {
            "total": 4, "queued": 1, "running": 0, "completed": 2, "failed": 1, "cancelled": 0,
        }  # fmt: skip
        assert [f["job_id"] for p in reopened["failures"] for f in p["failures"]] == [failed[0]]

        async with pipeline_worker(db):
            report = await run_report_when(db, org_id, run_id)
        assert dump(report.progress) == kept["detail"]["progress"]
        again = await _seen(client, cli_status, run_id)
        assert again["detail"]["progress"] == kept["detail"]["progress"]
        assert again["cli"]["progress"] == kept["detail"]["progress"]
        listed = sorted(f["job_id"] for p in again["failures"] for f in p["failures"])
        assert listed == sorted(failed)  # each once: the pruned one and the one that ran again
