"""`valuerank queue limits …` on both backends, on the database and against a live server."""

from __future__ import annotations

from .conftest import Invoke


def test_set_list_change_and_remove(cli_both: Invoke) -> None:
    made = cli_both("queue", "limits", "set", "openai", "--rpm", "500", "--tpm", "30000", "--json")
    assert made.exit_code == 0, made.stderr
    assert made.json() == {
        "key": made.json()["key"],
        "provider": "openai",
        "model": None,
        "rpm": 500.0,
        "tpm": 30000.0,
        "min_interval_ms": 0,
        "concurrency": None,
        "blocked_until": None,
        "rate_limited_total": 0,
    }
    model = cli_both(
        "queue", "limits", "set", "openai", "--model", "openai:gpt-4.1", "--concurrency", "4",
        "--min-interval-ms", "50", "--json",
    ).json()  # fmt: skip
    assert model["concurrency"] == 4 and model["min_interval_ms"] == 50
    listed = cli_both("queue", "limits", "list", "--json").json()
    assert {(r["provider"], r["model"]) for r in listed} == {
        ("openai", None),
        ("openai", "openai:gpt-4.1"),
    }
    changed = cli_both("queue", "limits", "set", "openai", "--rpm", "60", "--json").json()
    assert changed["rpm"] == 60.0 and changed["tpm"] is None
    gone = cli_both("queue", "limits", "remove", "openai", "--json")
    assert gone.exit_code == 0 and gone.json()["removed"] is True
    assert len(cli_both("queue", "limits", "list", "--json").json()) == 1


def test_bad_limits_exit_1_with_a_code(cli_both: Invoke) -> None:
    bad = cli_both("queue", "limits", "set", "openai", "--rpm", "-5", "--json")
    assert bad.exit_code == 1 and bad.json()["code"] == "INVALID_INPUT"
    missing = cli_both("queue", "limits", "remove", "anthropic", "--json")
    assert missing.exit_code == 1 and missing.json()["code"] == "LIMITS_NOT_FOUND"


def test_zero_is_no_limit(cli_both: Invoke) -> None:
    capped = cli_both(
        "queue", "limits", "set", "openai", "--rpm", "500", "--concurrency", "4", "--json"
    ).json()  # fmt: skip
    assert (capped["rpm"], capped["concurrency"]) == (500.0, 4)
    lifted = cli_both(
        "queue", "limits", "set", "openai", "--rpm", "0", "--tpm", "0", "--concurrency", "0",
        "--json",
    )  # fmt: skip
    assert lifted.exit_code == 0, lifted.stdout
    data = lifted.json()
    assert (data["rpm"], data["tpm"], data["concurrency"]) == (None, None, None)
    assert "0 or unset: no limit" in cli_both("queue", "limits", "set", "--help").stdout
