"""`valuerank runs create --phrasings … --scale-order …` on both backends: stored, shown by
`runs status`, refused with a code when unknown or when the scale cannot be reversed; on the
database and through a server."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

import valuerank
from valuerank.db import Database

from .conftest import Invoke
from .runs_both_ways import definition_of, demo_definition, work_here

DEMO = Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md"


@pytest.fixture(autouse=True)
def _no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VALUERANK_WORKER_POLL_SECONDS", "0.05")


@dataclass(frozen=True)
class Definitions:
    demo: str
    flat: str  # the demo without its scale's numbered lines: nothing to reverse


@pytest.fixture
async def definitions(db: Database, org_id: str) -> Definitions:
    flat = "\n".join(line for line in DEMO.read_text().splitlines() if line[:1] not in "12345")
    return Definitions(await demo_definition(db, org_id), await definition_of(db, org_id, flat))


@pytest.mark.server_worker
def test_the_settings_are_stored_shown_and_checked(
    definitions: Definitions, cli_both: Invoke
) -> None:
    cli, definition = cli_both, definitions.demo
    created = cli(
        "runs", "create", "--definition", definition, "--model", "scripted:utilitarian",
        "--sample-percentage", "20", "--sample-seed", "1", "--followup-turns", "0",
        "--phrasings", "all", "--scale-order", "both", "--json",
    )  # fmt: skip
    assert created.exit_code == 0, created.stderr
    data = created.json()
    assert (data["phrasings"], data["scale_order"]) == ("all", "both")
    # 5 of 27 combinations, each in its phrasings (1 or 2) and both orders.
    assert data["scenarios"] % 2 == 0 and 10 <= data["scenarios"] <= 20
    assert data["jobs"] == data["scenarios"]
    waited = cli("runs", "wait", data["id"], *work_here(), "--timeout", "120", "--json")
    assert waited.exit_code == 0 and waited.json()["status"] == "completed", waited.stderr
    status = cli("runs", "status", data["id"], "--json").json()
    assert (status["phrasings"], status["scale_order"]) == ("all", "both")
    assert "phrasings: all  scale order: both" in cli("runs", "status", data["id"]).stdout

    wrong = cli(
        "runs", "create", "--definition", definition, "--model", "scripted:utilitarian",
        "--scale-order", "sideways", "--json",
    )  # fmt: skip
    assert wrong.exit_code == 1 and wrong.json()["code"] == "INVALID_INPUT"
    assert "scale_order" in wrong.json()["error"]

    refused = cli(
        "runs", "create", "--definition", definitions.flat, "--model", "scripted:utilitarian",
        "--scale-order", "reversed", "--json",
    )  # fmt: skip
    assert refused.exit_code == 1 and refused.json()["code"] == "SCALE_NOT_REVERSIBLE"
    assert [r["id"] for r in cli("runs", "list", "--json").json()] == [data["id"]]


def test_the_help_explains_both_options(cli: Invoke) -> None:
    shown = cli("runs", "create", "--help").stdout
    assert "--phrasings" in shown and "--scale-order" in shown
    assert "as-written" in shown and "random" in shown
