"""`valuerank runs wait` draws its bar as the pages do: completed work of all jobs, failed and
cancelled jobs named beside it, never counted as done (issue 22); the same through a server."""

from __future__ import annotations

import pytest

from valuerank.db import Database

from .conftest import Invoke
from .runs_both_ways import demo_definition


@pytest.fixture(autouse=True)
def _wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # the whole bar line, unwrapped


@pytest.fixture
async def definition(db: Database, org_id: str) -> str:
    return await demo_definition(db, org_id)


def test_a_cancelled_run_is_not_shown_as_done(definition: str, cli_both: Invoke) -> None:
    cli = cli_both
    created = cli(
        "runs", "create", "--definition", definition, "--model", "scripted:utilitarian",
        "--model", "scripted:contrarian", "--sample-percentage", "15", "--json",
    )  # fmt: skip
    run_id = created.json()["id"]
    assert cli("runs", "cancel", run_id, "--json").json()["status"] == "cancelled"
    progress = cli("runs", "status", run_id, "--json").json()["progress"]
    assert (progress["completed"], progress["cancelled"], progress["total"]) == (0, 8, 8)

    out = cli("runs", "wait", run_id)
    assert out.exit_code == 0, out.stderr
    assert "0/8" in out.stdout and "8/8" not in out.stdout
    assert "8 cancelled" in out.stdout
