"""`valuerank maintenance run|history|schedule-summary` through the real Typer app, both
backends: a pass closes stale runs and says how many; the history and schedule read back."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from valuerank.config import get_settings
from valuerank.db import Database, create_database
from valuerank.orgs import ensure_org
from valuerank.runs.service import get_run
from valuerank.runs.states import RunStatus

from .conftest import Invoke

T = TypeVar("T")


def _on_db(database_url: Any, work: Callable[[Database, str], Awaitable[T]]) -> T:
    """Run `work(db, org_id)` on the CLI's database, in the CLI's organisation."""

    async def _go() -> T:
        db = create_database(database_url.url)
        try:
            async with db.transaction() as conn:
                org_id = await ensure_org(conn, get_settings().default_org)
            return await work(db, org_id)
        finally:
            await db.dispose()

    return asyncio.run(_go())


async def _status(db: Database, org_id: str, run_id: str) -> RunStatus:
    async with db.transaction() as conn:
        return (await get_run(conn, org_id, run_id)).status


def test_run_reports_the_stale_runs_it_closed(
    cli: Invoke, database_url: Any, stale_run_on: Any
) -> None:
    run_id = _on_db(database_url, lambda db, org: stale_run_on(db, org, write=True))
    out = cli("maintenance", "run", "--json")
    assert out.exit_code == 0, out.stderr
    done = out.json()
    assert (done["kind"], done["trigger"], done["status"]) == ("full", "cli", "succeeded")
    assert done["actions"]["stale_runs"]["reaped"] == 1
    assert done["actions"]["stale_runs"]["completed"] == 1
    status = _on_db(database_url, lambda db, org: _status(db, org, run_id))
    assert status is RunStatus.COMPLETED
    text = cli("maintenance", "run")
    assert text.exit_code == 0
    assert "stale runs: 0 reaped (0 completed, 0 failed), 0 resumed" in text.stdout
    assert "response cache: 0 cached answers deleted (older than 90 days)" in text.stdout


def test_history_lists_passes_newest_first(cli: Invoke) -> None:
    assert cli("maintenance", "history", "--json").json() == []
    assert "no maintenance pass recorded yet" in cli("maintenance", "history").stdout
    first = cli("maintenance", "run", "--json").json()
    second = cli("maintenance", "run", "--json").json()
    listed = cli("maintenance", "history", "--json")
    assert listed.exit_code == 0, listed.stderr
    assert [p["id"] for p in listed.json()] == [second["id"], first["id"]]
    assert [p["id"] for p in cli("maintenance", "history", "-n", "1", "--json").json()] == [
        second["id"]
    ]
    assert cli("maintenance", "history", "--kind", "prune_jobs", "--json").json() == []
    text = cli("maintenance", "history")
    assert text.exit_code == 0 and second["id"] in text.stdout and "full" in text.stdout


def test_schedule_summary(cli: Invoke, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VALUERANK_WORKER_MAINTENANCE_INTERVAL_SECONDS", "600")
    never = cli("maintenance", "schedule-summary", "--json")
    assert never.exit_code == 0, never.stderr
    assert never.json()["status"] == "never_run" and never.json()["interval_seconds"] == 600
    done = cli("maintenance", "run", "--json").json()
    summary = cli("maintenance", "schedule-summary", "--json").json()
    assert summary["status"] == "ok" and summary["last_pass"]["id"] == done["id"]
    assert summary["next_due"] and summary["anomalies"] == []
    text = cli("maintenance", "schedule-summary")
    assert text.exit_code == 0 and "schedule: ok (every 600 s)" in text.stdout
