"""Drive the real `valuerank` Typer app against a real database on each backend."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from typer.testing import CliRunner

from valuerank.cli import app
from valuerank.config import get_settings
from valuerank.db import Database


@dataclass
class Outcome:
    exit_code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


Invoke = Callable[..., Outcome]


@pytest.fixture
def cli(raw_cli: Invoke, db: Database) -> Invoke:
    """`raw_cli` on a migrated database (the `db` fixture's copy of a migrated template;
    PostgreSQL is never migrated implicitly, and `db upgrade` has tests of its own)."""
    return raw_cli


@pytest.fixture
def raw_cli(database_url: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Invoke]:
    """Run `valuerank ARGS…` with VALUERANK_DATABASE_URL pointing at this test's empty database."""
    monkeypatch.setenv("VALUERANK_DATABASE_URL", database_url.url)
    get_settings.cache_clear()
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None) -> Outcome:
        get_settings.cache_clear()
        result = runner.invoke(app, list(args), input=input, catch_exceptions=False)
        return Outcome(result.exit_code, result.stdout, result.stderr)

    yield invoke
    get_settings.cache_clear()
