"""With VALUERANK_API_URL set, the CLI never quietly works on a database: a command with no
server path is refused (NO_SERVER_PATH), and one that can only work on the database (db,
worker, serve, maintenance) says on stderr that it does."""

from __future__ import annotations

from pathlib import Path

import pytest

from valuerank.client import API_TOKEN_ENV, API_URL_ENV
from valuerank.config import get_settings

from .conftest import Invoke


def test_a_local_only_command_says_it_works_on_the_database(
    cli: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(API_URL_ENV, "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv(API_TOKEN_ENV, "vrt_unused")
    get_settings.cache_clear()
    out = cli("db", "current", "--json")
    assert out.exit_code == 0, out.stdout + out.stderr
    assert out.json()["current"] == out.json()["head"]
    assert "`valuerank db current` works on the database" in out.stderr
    assert "VALUERANK_API_URL is not used" in out.stderr


def test_a_command_without_a_server_path_is_refused_not_run_on_a_database(
    tmp_path: Path,
) -> None:
    from valuerank.cli.common import NoServerPathError, configured_database
    from valuerank.config import Settings

    local = tmp_path / "local.db"
    settings = Settings(api_url="http://127.0.0.1:9", database_url=f"sqlite:///{local}")
    with pytest.raises(NoServerPathError) as refused:
        configured_database(settings)
    assert refused.value.code == "NO_SERVER_PATH"
    assert "http://127.0.0.1:9" in refused.value.message
    assert refused.value.hint and "unset VALUERANK_API_URL" in refused.value.hint
    assert not local.exists()
    # Without a server, the same settings open the database.
    assert configured_database(Settings(database_url=f"sqlite:///{local}")).url.dialect


def test_runs_list_both_ways(cli_both: Invoke) -> None:
    out = cli_both("runs", "list", "--json")
    assert out.exit_code == 0, out.stdout + out.stderr
    assert out.json() == []
