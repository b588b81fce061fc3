"""`valuerank credentials …` on each backend, through the real Typer app: keys never printed.
The `cli_both` tests also ask a live server, which stores keys with its own secret key (the
`secret` fixture comes first: the server starts with it)."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from valuerank.cli import app
from valuerank.config import get_settings
from valuerank.crypto import is_fernet_key
from valuerank.providers.presets import PRESETS

from .conftest import Invoke, Outcome

OPENAI_KEY = "sk-proj-cli-test-0123456789-abcd"
ANTHROPIC_KEY = "sk-ant-from-the-environment-wxyz"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No provider key of the machine running the tests leaks into them."""
    for preset in PRESETS.values():
        for var in preset.api_key_envs:
            monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("VALUERANK_SECRET_KEY", raising=False)


@pytest.fixture
def secret(monkeypatch: pytest.MonkeyPatch) -> str:
    from valuerank.crypto import generate_key

    key = generate_key()
    monkeypatch.setenv("VALUERANK_SECRET_KEY", key)
    return key


def _invoke_with_input(text: str, *args: str) -> Outcome:
    get_settings.cache_clear()
    result = CliRunner().invoke(app, list(args), input=text, catch_exceptions=False)
    return Outcome(result.exit_code, result.stdout, result.stderr)


def _no_key(out: Outcome, *keys: str) -> None:
    for key in keys:
        assert key not in out.stdout and key not in out.stderr


def test_set_from_env_then_list(
    secret: str, cli_both: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_OPENAI", OPENAI_KEY)
    out = cli_both("credentials", "set", "openai", "--from-env", "MY_OPENAI")
    assert out.exit_code == 0, out.stderr
    assert "••••abcd" in out.stdout and "openai" in out.stdout
    _no_key(out, OPENAI_KEY, secret)

    listed = cli_both("credentials", "list", "--json")
    assert listed.exit_code == 0, listed.stderr
    _no_key(listed, OPENAI_KEY, secret)
    [item] = listed.json()
    assert set(item) == {"provider", "source", "hint", "env_var", "created_at"}
    assert item["provider"] == "openai" and item["source"] == "stored"
    assert item["hint"] == "••••abcd" and item["env_var"] == "OPENAI_API_KEY"
    assert item["created_at"]

    table = cli_both("credentials", "list")
    assert table.exit_code == 0 and "openai" in table.stdout and "stored" in table.stdout
    _no_key(table, OPENAI_KEY)


def test_set_json_shape(secret: str, cli_both: Invoke, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("K", OPENAI_KEY)
    out = cli_both("credentials", "set", "OpenAI", "--from-env", "K", "--json")
    assert out.exit_code == 0, out.stderr
    data = out.json()
    assert data["provider"] == "openai" and data["hint"] == "••••abcd"
    assert data["source"] == "stored"
    _no_key(out, OPENAI_KEY)


def test_list_shows_environment_keys_and_stored_wins(
    cli: Invoke, secret: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-openai-key-0000-9999")
    monkeypatch.setenv("K", OPENAI_KEY)
    assert cli("credentials", "set", "openai", "--from-env", "K").exit_code == 0
    out = cli("credentials", "list", "--json")
    assert out.exit_code == 0, out.stderr
    _no_key(out, OPENAI_KEY, ANTHROPIC_KEY, "sk-env-openai-key-0000-9999")
    by_provider = {i["provider"]: i for i in out.json()}
    assert set(by_provider) == {"anthropic", "openai"}
    assert by_provider["anthropic"]["source"] == "environment"
    assert by_provider["anthropic"]["hint"] == "••••wxyz"
    assert by_provider["anthropic"]["created_at"] is None
    assert by_provider["openai"]["source"] == "stored"
    assert by_provider["openai"]["hint"] == "••••abcd"


def test_set_from_stdin_and_from_the_hidden_prompt(secret: str, cli_both: Invoke) -> None:
    out = _invoke_with_input(OPENAI_KEY + "\n", "credentials", "set", "openai", "--stdin")
    assert out.exit_code == 0, out.stderr
    _no_key(out, OPENAI_KEY)

    prompt_key = "sk-ant-typed-at-the-prompt-1234"
    out = _invoke_with_input(prompt_key + "\n", "credentials", "set", "anthropic")
    assert out.exit_code == 0, out.stderr
    assert "API key for anthropic" in out.stdout  # the prompt, without the typed key
    _no_key(out, prompt_key)
    hints = {i["provider"]: i["hint"] for i in cli_both("credentials", "list", "--json").json()}
    assert hints == {"anthropic": "••••1234", "openai": "••••abcd"}


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_on_the_embedded_default_set_uses_the_key_file_beside_the_database(
    cli: Invoke, database_url: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("K", OPENAI_KEY)
    out = cli("credentials", "set", "openai", "--from-env", "K", "--json")
    assert out.exit_code == 0, out.stderr
    key_file = Path(database_url.url.removeprefix("sqlite:///") + ".secret-key")
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    _no_key(out, OPENAI_KEY, key_file.read_text().strip())
    # The next command (a new process's worth of settings) opens the same key.
    again = cli("credentials", "set", "openai", "--from-env", "K", "--json")
    assert again.exit_code == 0, again.stderr
    [item] = cli("credentials", "list", "--json").json()
    assert (item["provider"], item["source"]) == ("openai", "stored")


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_without_a_secret_key_set_fails_clearly_and_list_still_works(
    cli: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("K", OPENAI_KEY)
    out = cli("credentials", "set", "openai", "--from-env", "K")
    assert out.exit_code == 1
    assert "VALUERANK_SECRET_KEY" in out.stderr and "valuerank credentials keygen" in out.stderr
    _no_key(out, OPENAI_KEY)
    as_json = cli("credentials", "set", "openai", "--from-env", "K", "--json")
    assert as_json.exit_code == 1 and as_json.json()["code"] == "SECRET_KEY_MISSING"

    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    listed = cli("credentials", "list", "--json")
    assert listed.exit_code == 0, listed.stderr
    assert [(i["provider"], i["source"]) for i in listed.json()] == [("openai", "environment")]
    _no_key(listed, OPENAI_KEY)


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_the_prompt_is_not_shown_without_a_secret_key(cli: Invoke) -> None:
    out = _invoke_with_input(OPENAI_KEY + "\n", "credentials", "set", "openai")
    assert out.exit_code == 1
    assert "API key for openai" not in out.stdout
    _no_key(out, OPENAI_KEY)


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("credentials", "set", "ollama", "--from-env", "K"), "INVALID_INPUT"),
        (("credentials", "set", "nosuch", "--from-env", "K"), "INVALID_INPUT"),
        (("credentials", "set", "openai", "--from-env", "UNSET_VARIABLE_X"), "INVALID_INPUT"),
        (("credentials", "set", "openai", "--from-env", "K", "--stdin"), "INVALID_INPUT"),
        (("credentials", "delete", "openai"), "NOT_FOUND"),
    ],
)
def test_errors_exit_1_with_a_code(
    cli: Invoke, secret: str, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...], code: str
) -> None:
    monkeypatch.setenv("K", OPENAI_KEY)
    monkeypatch.delenv("UNSET_VARIABLE_X", raising=False)
    out = cli(*args, "--json")
    assert out.exit_code == 1
    data: dict[str, Any] = out.json()
    assert data["success"] is False and data["code"] == code
    _no_key(out, OPENAI_KEY)
    text = cli(*args)
    assert text.exit_code == 1 and "error:" in text.stderr
    _no_key(text, OPENAI_KEY)


def test_errors_come_with_the_same_codes_from_a_server(
    secret: str, cli_both: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("K", OPENAI_KEY)
    for args, code in [
        (("credentials", "set", "ollama", "--from-env", "K"), "INVALID_INPUT"),
        (("credentials", "set", "nosuch", "--from-env", "K"), "INVALID_INPUT"),
        (("credentials", "delete", "openai"), "NOT_FOUND"),
    ]:
        out = cli_both(*args, "--json")
        assert out.exit_code == 1 and out.json()["code"] == code, (args, out.stdout)
        _no_key(out, OPENAI_KEY)
    spaced = _invoke_with_input("sk-a b\n", "credentials", "set", "openai", "--stdin", "--json")
    assert spaced.exit_code == 1 and spaced.json()["code"] == "INVALID_INPUT"


def test_empty_stdin_is_refused(secret: str, cli_both: Invoke) -> None:
    out = _invoke_with_input("\n", "credentials", "set", "openai", "--stdin", "--json")
    assert out.exit_code == 1 and out.json()["code"] == "INVALID_INPUT"
    assert "empty" in out.json()["error"]


def test_delete(secret: str, cli_both: Invoke, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("K", OPENAI_KEY)
    assert cli_both("credentials", "set", "openai", "--from-env", "K").exit_code == 0
    out = cli_both("credentials", "delete", "openai", "--json")
    assert out.exit_code == 0, out.stderr
    assert out.json() == {"provider": "openai", "deleted": True}
    assert cli_both("credentials", "list", "--json").json() == []
    again = cli_both("credentials", "delete", "openai")
    assert again.exit_code == 1
    assert "no stored API key" in again.stderr


def test_replacing_a_key_keeps_one_row(
    secret: str, cli_both: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("K", OPENAI_KEY)
    assert cli_both("credentials", "set", "openai", "--from-env", "K").exit_code == 0
    monkeypatch.setenv("K", "sk-proj-replacement-key-0000-zzzz")
    assert cli_both("credentials", "set", "openai", "--from-env", "K").exit_code == 0
    [item] = cli_both("credentials", "list", "--json").json()
    assert item["hint"] == "••••zzzz"


def test_keygen_prints_a_fernet_key(raw_cli: Invoke) -> None:
    first, second = raw_cli("credentials", "keygen"), raw_cli("credentials", "keygen")
    assert first.exit_code == 0 and second.exit_code == 0
    assert is_fernet_key(first.stdout.strip()) and is_fernet_key(second.stdout.strip())
    assert first.stdout != second.stdout
    assert "VALUERANK_SECRET_KEY" in first.stderr


def test_a_passphrase_secret_works_end_to_end(cli: Invoke, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VALUERANK_SECRET_KEY", "a long enough passphrase for tests")
    monkeypatch.setenv("K", OPENAI_KEY)
    out = cli("credentials", "set", "openai", "--from-env", "K", "--json")
    assert out.exit_code == 0, out.stderr
    monkeypatch.setenv("VALUERANK_SECRET_KEY", "short")
    bad = cli("credentials", "set", "openai", "--from-env", "K", "--json")
    assert bad.exit_code == 1 and bad.json()["code"] == "SECRET_KEY_INVALID"
    assert "short" not in bad.json()["error"]
