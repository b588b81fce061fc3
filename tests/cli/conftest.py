"""Drive the real `valuerank` Typer app against a real database on each backend."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.api.conftest import TOKEN, api_settings, provision_admin
from tests.cli_against_server import UNTOUCHED_DB
from tests.conftest import TestDatabase
from tests.servers import serving_in_a_thread
from typer.testing import CliRunner

from valuerank.cli import app
from valuerank.client import API_TOKEN_ENV, API_URL_ENV
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


@pytest.fixture(params=["local", "server"])
async def cli_both(
    request: pytest.FixtureRequest,
    raw_cli: Invoke,
    db: Database,
    org_id: str,
    database_url: TestDatabase,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> AsyncIterator[Invoke]:
    """`cli`, run both ways: on the database (`local`), and (`server`) asking a live
    `valuerank serve` on loopback over the same database, as its admin (VALUERANK_API_URL and
    a token) — with VALUERANK_DATABASE_URL naming a file no command may create: a command
    that quietly used a database instead of the server fails the test. A test marked
    `server_worker` gets a server that also runs the jobs (`valuerank serve` on one host)."""
    if request.param == "local":
        yield raw_cli
        return
    async with _asking_a_server(request, raw_cli, db, org_id, database_url, monkeypatch, tmp_path):
        yield raw_cli


@pytest.fixture
async def cli_server(
    request: pytest.FixtureRequest,
    raw_cli: Invoke,
    db: Database,
    org_id: str,
    database_url: TestDatabase,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> AsyncIterator[Invoke]:
    """`cli_both`'s `server` way alone, for what only a server path has (the database's
    answer to compare with is read with `cli` settings inside the test)."""
    async with _asking_a_server(request, raw_cli, db, org_id, database_url, monkeypatch, tmp_path):
        yield raw_cli


@asynccontextmanager
async def _asking_a_server(
    request: pytest.FixtureRequest,
    raw_cli: Invoke,
    db: Database,
    org_id: str,
    database_url: TestDatabase,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> AsyncIterator[None]:
    await provision_admin(db, org_id)
    untouched = tmp_path / UNTOUCHED_DB
    work = request.node.get_closest_marker("server_worker") is not None
    with serving_in_a_thread(database_url.url, org_id, settings=api_settings(), work=work) as url:
        monkeypatch.setenv(API_URL_ENV, url)
        monkeypatch.setenv(API_TOKEN_ENV, TOKEN)
        monkeypatch.setenv("VALUERANK_DATABASE_URL", f"sqlite:///{untouched}")
        get_settings.cache_clear()
        yield
    get_settings.cache_clear()
    assert not untouched.exists(), "a command used a local database instead of the server"
