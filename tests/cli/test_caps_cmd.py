"""`valuerank queue caps …` on both backends: every cap can be set, changed and lifted."""

from __future__ import annotations

from .conftest import Invoke


def test_every_cap_is_set_changed_and_lifted(cli: Invoke) -> None:
    assert cli("orgs", "create", "Acme", "--json").exit_code == 0
    for flags in (["--global"], ["--org", "acme"], ["--provider", "openai"],
                  ["--model", "openai:gpt-4o"]):  # fmt: skip
        made = cli("queue", "caps", "set", "3", *flags, "--json")
        assert made.exit_code == 0, made.stdout
        assert made.json()["max"] == 3
    listed = {r["key"]: r for r in cli("queue", "caps", "list", "--json").json()}
    assert {r["scope"] for r in listed.values()} == {"global", "org", "provider", "model"}
    assert "model:openai:openai:gpt-4o" in listed and "provider:openai" in listed
    assert not any(r["is_default"] for r in listed.values())  # set by hand, not the default
    changed = cli("queue", "caps", "set", "5", "--org", "acme", "--json").json()
    assert changed["max"] == 5
    lifted = cli("queue", "caps", "set", "0", "--global", "--json").json()  # 0: no cap
    assert lifted == {"key": "global", "scope": "global", "max": None}
    gone = cli("queue", "caps", "remove", "--provider", "openai", "--json")
    assert gone.exit_code == 0 and gone.json() == {"key": "provider:openai", "removed": True}
    left = {r["key"]: r["max"] for r in cli("queue", "caps", "list", "--json").json()}
    assert len(left) == 2 and 5 in left.values()


def test_bad_caps_exit_1_with_a_code(cli: Invoke) -> None:
    negative = cli("queue", "caps", "set", "-1", "--global", "--json")
    assert negative.exit_code != 0
    nothing = cli("queue", "caps", "set", "2", "--json")
    assert nothing.exit_code == 1 and nothing.json()["code"] == "INVALID_INPUT"
    two = cli("queue", "caps", "set", "2", "--global", "--provider", "x", "--json")
    assert two.exit_code == 1 and two.json()["code"] == "INVALID_INPUT"
    missing = cli("queue", "caps", "remove", "--provider", "anthropic", "--json")
    assert missing.exit_code == 1 and missing.json()["code"] == "CAP_NOT_FOUND"
    unknown = cli("queue", "caps", "set", "2", "--org", "nope", "--json")
    assert unknown.exit_code == 1 and unknown.json()["code"] == "NOT_FOUND"
    assert cli("queue", "caps", "list", "--json").json() == []  # nothing half-written
