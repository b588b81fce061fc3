"""What the tests of the CLI asking a server share (tests/test_entry.py, tests/cli/
test_runs_remote.py): a user's environment pointing the CLI at a server, and the full Typer
CLI run in a thread (the server is served by the test's own event loop)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner

from valuerank.cli import app
from valuerank.client import API_TOKEN_ENV, API_URL_ENV
from valuerank.config import get_settings

UNTOUCHED_DB = "untouched.db"


@dataclass
class Answer:
    code: int
    stdout: str
    stderr: str


def user_env(url: str, token: str, tmp_path: Path, **extra: str) -> dict[str, str]:
    """A user's environment asking the server at `url` with `token`; its database setting
    names a file (`tmp_path / UNTOUCHED_DB`) that asking the server must never create."""
    env = database_env(f"sqlite:///{tmp_path / UNTOUCHED_DB}")
    env |= {API_URL_ENV: url, API_TOKEN_ENV: token, "COLUMNS": "100"}
    return env | extra


def database_env(database_url: str) -> dict[str, str]:
    """A user's environment reading the database at `database_url` (no other VALUERANK_
    setting of this machine)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VALUERANK_")}
    return env | {"VALUERANK_DATABASE_URL": database_url, "COLUMNS": "100"}


def full_cli(env: Mapping[str, str], *args: str) -> Answer:
    """`valuerank ARGS…` through the Typer app (never the entry point's fast path)."""
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(app, list(args), env=dict(env), catch_exceptions=False)
    finally:
        get_settings.cache_clear()
    return Answer(result.exit_code, result.stdout, result.stderr)
