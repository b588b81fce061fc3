"""`valuerank queue caps …` on both backends, on the database and against a live server: every
cap can be set, changed and lifted."""

from __future__ import annotations

import pytest

from valuerank.db import Database
from valuerank.orgs import create_org

from .conftest import Invoke


@pytest.fixture
async def acme(db: Database) -> str:
    """A second organisation, made in the database (`orgs create` works on it only)."""
    async with db.transaction() as conn:
        return (await create_org(conn, "Acme")).slug


def test_every_cap_is_set_changed_and_lifted(cli_both: Invoke, acme: str) -> None:
    for flags in (["--global"], ["--org", "acme"], ["--provider", "openai"],
                  ["--model", "openai:gpt-4o"]):  # fmt: skip
        made = cli_both("queue", "caps", "set", "3", *flags, "--json")
        assert made.exit_code == 0, made.stdout
        assert made.json()["max"] == 3
    listed = {r["key"]: r for r in cli_both("queue", "caps", "list", "--json").json()}
    assert {r["scope"] for r in listed.values()} == {"global", "org", "provider", "model"}
    assert "model:openai:openai:gpt-4o" in listed and "provider:openai" in listed
    assert not any(r["is_default"] for r in listed.values())  # set by hand, not the default
    changed = cli_both("queue", "caps", "set", "5", "--org", "acme", "--json").json()
    assert changed["max"] == 5
    lifted = cli_both("queue", "caps", "set", "0", "--global", "--json").json()  # 0: no cap
    assert lifted == {"key": "global", "scope": "global", "max": None}
    gone = cli_both("queue", "caps", "remove", "--provider", "openai", "--json")
    assert gone.exit_code == 0 and gone.json() == {"key": "provider:openai", "removed": True}
    left = {r["key"]: r["max"] for r in cli_both("queue", "caps", "list", "--json").json()}
    assert len(left) == 2 and 5 in left.values()


def test_bad_caps_exit_1_with_a_code(cli_both: Invoke) -> None:
    negative = cli_both("queue", "caps", "set", "-1", "--global", "--json")
    assert negative.exit_code != 0
    nothing = cli_both("queue", "caps", "set", "2", "--json")
    assert nothing.exit_code == 1 and nothing.json()["code"] == "INVALID_INPUT"
    two = cli_both("queue", "caps", "set", "2", "--global", "--provider", "x", "--json")
    assert two.exit_code == 1 and two.json()["code"] == "INVALID_INPUT"
    missing = cli_both("queue", "caps", "remove", "--provider", "anthropic", "--json")
    assert missing.exit_code == 1 and missing.json()["code"] == "CAP_NOT_FOUND"
    unknown = cli_both("queue", "caps", "set", "2", "--org", "nope", "--json")
    assert unknown.exit_code == 1 and unknown.json()["code"] == "NOT_FOUND"
    assert cli_both("queue", "caps", "list", "--json").json() == []  # nothing half-written
