"""A completed run of scripted models, judged by a scripted judge, made by the real CLI on
each backend; the real API on loopback to read it through (tests/api's fixtures)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from tests.api.conftest import DEMO, TOKEN, api_settings, live, provision_admin
from tests.conftest import TestDatabase
from typer.testing import CliRunner

from valuerank.cli import app
from valuerank.config import get_settings
from valuerank.db import Database

__all__ = ["TOKEN", "api_settings", "live", "provision_admin"]

TARGETS = ("scripted:utilitarian", "scripted:contrarian")
JUDGE = "scripted:centrist"


@dataclass(frozen=True)
class Answer:
    code: int
    output: str

    def json(self) -> Any:
        return json.loads(self.output)


CliCall = Callable[..., Answer]


def cli_on(url: str, *args: str) -> Answer:
    """`valuerank ARGS…` on the database at `url` (synchronous: call it in a thread from an
    async test, as it runs its own event loop)."""
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(
            app, list(args), env={"VALUERANK_DATABASE_URL": url}, catch_exceptions=False
        )
    finally:
        get_settings.cache_clear()
    return Answer(result.exit_code, result.stdout)


def complete_run(url: str, *extra: str) -> str:
    """A run of the demo definition by two scripted targets and a scripted judge, worked to
    its end by the CLI's in-process worker; its id."""
    imported = cli_on(url, "definitions", "import", str(DEMO), "--json")
    assert imported.code == 0, imported.output
    created = cli_on(
        url, "runs", "create", "--definition", str(imported.json()["id"]),
        *(a for m in TARGETS for a in ("--model", m)), "--judge", JUDGE,
        "--sample-percentage", "20", "--followup-turns", "0", *extra, "--json",
    )  # fmt: skip
    assert created.code == 0, created.output
    run_id = str(created.json()["id"])
    waited = cli_on(url, "runs", "wait", run_id, "--work", "--timeout", "120", "--json")
    assert waited.code == 0 and waited.json()["status"] == "completed", waited.output
    return run_id


@pytest.fixture
async def completed(db: Database, database_url: TestDatabase) -> str:
    """The id of a completed, judged run in the test's database (migrated by `db`)."""
    return await asyncio.to_thread(complete_run, database_url.url)
