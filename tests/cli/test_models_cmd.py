"""`valuerank models …` on each backend, through the real Typer app, on the database and (the
`cli_both` tests) against a live server."""

from __future__ import annotations

from typing import Any

import pytest

from valuerank.providers.catalog import CATALOG, catalog_model

from .conftest import Invoke


@pytest.fixture
def seeded(cli_both: Invoke) -> Invoke:
    out = cli_both("models", "seed", "--json")
    assert out.exit_code == 0, out.stderr
    return cli_both


@pytest.fixture
def seeded_here(cli: Invoke) -> Invoke:
    """`seeded` on the database only: for tests of the local path's own behaviour."""
    out = cli("models", "seed", "--json")
    assert out.exit_code == 0, out.stderr
    return cli


def test_seed_is_idempotent(cli_both: Invoke) -> None:
    first = cli_both("models", "seed", "--json")
    assert first.exit_code == 0, first.stderr
    assert first.json() == {"inserted": [m.id for m in CATALOG], "existing": 0}
    again = cli_both("models", "seed")
    assert again.exit_code == 0
    assert f"added 0 models; {len(CATALOG)} already registered" in again.stdout


def test_list_json_shape_and_filters(seeded: Invoke) -> None:
    out = seeded("models", "list", "--json")
    assert out.exit_code == 0, out.stderr
    data: list[dict[str, Any]] = out.json()
    assert len(data) == len([m for m in CATALOG if m.active])
    assert set(data[0]) == {
        "id",
        "provider",
        "name",
        "display_name",
        "version",
        "category",
        "capabilities",
        "weight",
        "active",
        "input_price_per_mtok",
        "output_price_per_mtok",
        "created_at",
    }
    assert [m["id"] for m in data] == sorted(
        (m["id"] for m in data), key=lambda i: tuple(i.split(":", 1))
    )
    anthropic = seeded("models", "list", "--provider", "anthropic", "--json").json()
    assert {m["provider"] for m in anthropic} == {"anthropic"}
    assert len(anthropic) == len([m for m in CATALOG if m.provider == "anthropic"])


def test_inactive_models_only_with_all(seeded: Invoke) -> None:
    out = seeded("models", "set", "openai:gpt-4o", "--inactive", "--json")
    assert out.exit_code == 0, out.stderr
    assert out.json()["active"] is False
    active_ids = [m["id"] for m in seeded("models", "list", "--json").json()]
    all_ids = [m["id"] for m in seeded("models", "list", "--all", "--json").json()]
    assert "openai:gpt-4o" not in active_ids and "openai:gpt-4o" in all_ids
    assert seeded("models", "set", "openai:gpt-4o", "--active", "--json").json()["active"]


def test_list_table_shows_prices(seeded_here: Invoke) -> None:
    out = seeded_here("models", "list", "--provider", "openai")
    assert out.exit_code == 0, out.stderr
    entry = catalog_model("openai:gpt-4.1")
    assert entry is not None and entry.input_price_per_mtok is not None
    assert (
        "openai:gpt-4.1" in out.stdout and "in $" in out.stdout and "USD per million" in out.stdout
    )
    assert f"{entry.input_price_per_mtok:,.2f}" in out.stdout


def test_empty_registry_says_how_to_seed(cli: Invoke) -> None:
    out = cli("models", "list")
    assert out.exit_code == 0 and "valuerank models seed" in out.stdout
    assert cli("models", "list", "--json").json() == []


def test_show(seeded: Invoke) -> None:
    out = seeded("models", "show", "anthropic:claude-3.5-haiku", "--json")
    assert out.exit_code == 0, out.stderr
    data = out.json()
    assert data["id"] == "anthropic:claude-3-5-haiku-latest"
    assert isinstance(data["capabilities"], list)
    text = seeded("models", "show", "openai:gpt-4.1")
    assert text.exit_code == 0 and "GPT-4.1" in text.stdout and "weight" in text.stdout


def test_set_changes_survive_a_reseed(seeded: Invoke) -> None:
    out = seeded(
        "models",
        "set",
        "openai:gpt-4.1",
        "--weight",
        "2.5",
        "--input-price",
        "1.5",
        "--output-price",
        "unknown",
        "--json",
    )
    assert out.exit_code == 0, out.stderr
    data = out.json()
    assert data["weight"] == 2.5 and data["input_price_per_mtok"] == 1.5
    assert data["output_price_per_mtok"] is None
    assert seeded("models", "seed", "--json").json()["inserted"] == []
    again = seeded("models", "show", "openai:gpt-4.1", "--json").json()
    assert (again["weight"], again["input_price_per_mtok"], again["output_price_per_mtok"]) == (
        2.5,
        1.5,
        None,
    )
    text = seeded("models", "show", "openai:gpt-4.1")
    assert "?" in text.stdout  # the unknown price


def test_add_a_custom_model(cli_both: Invoke) -> None:
    out = cli_both(
        "models",
        "add",
        "openrouter:qwen/qwen3-235b",
        "--display-name",
        "Qwen3 235B",
        "--category",
        "open-weights",
        "--input-price",
        "0.2",
        "--output-price",
        "0.6",
        "--json",
    )
    assert out.exit_code == 0, out.stderr
    data = out.json()
    assert data["id"] == "openrouter:qwen/qwen3-235b" and data["display_name"] == "Qwen3 235B"
    assert (data["input_price_per_mtok"], data["output_price_per_mtok"]) == (0.2, 0.6)
    listed = cli_both("models", "list", "--provider", "openrouter", "--json").json()
    assert "openrouter:qwen/qwen3-235b" in [m["id"] for m in listed]


ERRORS = [
    (("models", "show", "openai:nonexistent"), "MODEL_NOT_FOUND"),
    (("models", "show", "no-colon"), "INVALID_INPUT"),
    (("models", "set", "openai:nonexistent", "--weight", "2"), "MODEL_NOT_FOUND"),
    (("models", "set", "openai:gpt-4.1"), "INVALID_INPUT"),
    (("models", "set", "openai:gpt-4.1", "--weight", "-1"), "INVALID_INPUT"),
    (("models", "set", "openai:gpt-4.1", "--input-price", "cheap"), "INVALID_INPUT"),
    (("models", "set", "openai:gpt-4.1", "--output-price", "-2"), "INVALID_INPUT"),
    (("models", "add", "nosuch:model"), "INVALID_INPUT"),
]


@pytest.mark.parametrize(("args", "code"), ERRORS)
def test_errors_exit_1_with_a_code(seeded_here: Invoke, args: tuple[str, ...], code: str) -> None:
    out = seeded_here(*args, "--json")
    assert out.exit_code == 1, out.stdout
    data = out.json()
    assert data["success"] is False and data["code"] == code
    text = seeded_here(*args)
    assert text.exit_code == 1 and "error:" in text.stderr


def test_errors_come_with_the_same_codes_from_a_server(seeded: Invoke) -> None:
    # One server for every case: each asks it, as the local test above asks the database.
    for args, code in ERRORS:
        out = seeded(*args, "--json")
        assert out.exit_code == 1, (args, out.stdout)
        assert out.json()["code"] == code, (args, out.stdout)
