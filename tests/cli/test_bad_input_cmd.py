"""The CLI's input PostgreSQL cannot take is bad input (INVALID_INPUT), never a database
outage, on both databases, and nothing is written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .conftest import Invoke

DEMO = str(Path(__file__).parents[2] / "src/valuerank/demo/exp-demo-whistleblower.md")


def test_a_priority_past_the_column_is_invalid_input(cli: Invoke) -> None:
    definition = cli("definitions", "import", DEMO, "--json").json()["id"]
    for priority in ("2147483648", "99999999999999999999", "-2147483649"):
        out = cli(
            "runs", "create", "--definition", definition, "--model", "scripted:utilitarian",
            "--priority", priority, "--json",
        )  # fmt: skip
        assert out.exit_code == 1
        assert out.json()["code"] == "INVALID_INPUT" and "priority" in out.json()["error"]
    assert cli("runs", "list", "--json").json() == []  # nothing written
    edge = cli(
        "runs", "create", "--definition", definition, "--model", "scripted:utilitarian",
        "--priority", "2147483647", "--no-start", "--json",
    )  # fmt: skip
    assert edge.exit_code == 0, edge.stdout


# SQLite stores NUL characters: there is no DataError to map there.
@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_a_value_the_database_refuses_is_not_an_outage(cli: Invoke, database_url: Any) -> None:
    """A NUL cannot come through a shell's arguments, but a value the driver refuses
    (psycopg's DataError) is INVALID_INPUT whatever brought it."""
    before = cli("orgs", "list", "--json").json()
    out = cli("orgs", "create", "Lab\x00", "--json")
    assert out.exit_code == 1
    assert out.json()["code"] == "INVALID_INPUT" and "NUL" in out.json()["error"], out.stdout
    assert cli("orgs", "list", "--json").json() == before
