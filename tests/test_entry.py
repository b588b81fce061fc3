"""The `valuerank` entry point: `runs status RUN [--json]` with VALUERANK_API_URL set is
answered by that server before the CLI loads, and prints what the full CLI prints; anything
else goes to the full CLI. Against the real API on loopback, on each backend."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.api.conftest import TOKEN, api_settings, make_demo_run, provision_admin
from tests.cli_against_server import UNTOUCHED_DB, Answer, database_env, full_cli, user_env
from tests.conftest import TestDatabase
from tests.servers import running

from valuerank.api import create_app
from valuerank.client import API_TOKEN_ENV, API_URL_ENV
from valuerank.db import Database
from valuerank.entry import answer_fast, status_request
from valuerank.refs import short_id

# Loaded by the full CLI and by every command that reads the database; not by the fast path.
NOT_FOR_THE_FAST_PATH = (
    "typer",
    "click",
    "pydantic",
    "pydantic_settings",
    "sqlalchemy",
    "valuerank.cli",
    "valuerank.config",
    "valuerank.db",
)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["runs", "status", "r1"], ("r1", False)),
        (["runs", "status", "r1", "--json"], ("r1", True)),
        (["runs", "status", "--json", "r1"], ("r1", True)),
        (["runs", "status"], None),
        (["runs", "status", "--json"], None),
        (["runs", "status", "--help"], None),
        (["runs", "status", "r1", "--help"], None),
        (["runs", "status", "r1", "r2"], None),
        (["runs", "status", "r1", "--json", "--json"], None),
        (["runs", "status", "--", "r1"], None),
        (["runs", "results", "r1"], None),
        (["--version"], None),
        ([], None),
    ],
)
def test_only_runs_status_of_one_run_takes_the_fast_path(
    args: list[str], expected: tuple[str, bool] | None
) -> None:
    assert status_request(args) == expected


def test_without_a_server_in_the_environment_thefull_cli_answers() -> None:
    assert answer_fast(["runs", "status", "r1", "--json"], {}) is None
    assert answer_fast(["runs", "status", "r1"], {API_URL_ENV: " "}) is None
    assert answer_fast(["runs", "list"], {API_URL_ENV: "http://127.0.0.1:9"}) is None


@dataclass
class Server:
    url: str
    run_id: str
    database: TestDatabase

    def env(self, tmp_path: Path, **extra: str) -> dict[str, str]:
        return user_env(self.url, TOKEN, tmp_path, **extra)


@pytest.fixture
async def server(db: Database, org_id: str, database_url: TestDatabase) -> AsyncIterator[Server]:
    await provision_admin(db, org_id)
    run = await make_demo_run(
        db, org_id, name="[bold]not markup[/]", decisions={"scripted:utilitarian": [2, 4]}
    )
    async with running(create_app(db, org_id=org_id, settings=api_settings())) as url:
        yield Server(url, run.id, database_url)


async def _valuerank(env: Mapping[str, str], *args: str) -> Answer:
    """`python -m valuerank ARGS…` in a new process, as a user runs it."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "valuerank",
        *args,
        env=dict(env),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode is not None
    return Answer(proc.returncode, out.decode(), err.decode())


async def test_the_server_answers_what_thefull_cli_prints(server: Server, tmp_path: Path) -> None:
    env = server.env(tmp_path)
    for args in (("runs", "status", server.run_id, "--json"), ("runs", "status", server.run_id)):
        fast = await _valuerank(env, *args)
        full = await asyncio.to_thread(full_cli, env, *args)
        assert (fast.code, fast.stderr) == (0, "")
        assert fast == full
    assert not (tmp_path / UNTOUCHED_DB).exists()  # neither read the database

    data = json.loads(
        fast_json := (
            await _valuerank(env, "runs", "status", short_id(server.run_id), "--json")
        ).stdout
    )
    assert data["id"] == server.run_id and [r["model"] for r in data["results"]] == [
        "scripted:utilitarian"
    ]
    # The words: the run's name printed as written (not read as markup), its progress, cost.
    text = (await _valuerank(env, "runs", "status", server.run_id)).stdout
    assert f"run {server.run_id} [bold]not markup[/]: pending" in text
    assert "total: 0" in text and "cost: $0.0020" in text  # two transcripts at $0.001
    # Every field the database path prints, with the same value (the server adds more).
    local_env = database_env(server.database.url)
    local = await asyncio.to_thread(full_cli, local_env, "runs", "status", server.run_id, "--json")
    assert local.code == 0, local.stdout
    expected = json.loads(local.stdout)
    assert {k: data[k] for k in expected} == expected, fast_json


async def test_errors_exit_1_with_the_servers_code_and_what_to_do(
    server: Server, tmp_path: Path
) -> None:
    env = server.env(tmp_path)
    unknown = await _valuerank(env, "runs", "status", "no-such-run", "--json")
    assert unknown.code == 1
    assert json.loads(unknown.stdout) == {
        "success": False,
        "error": "no run with id 'no-such-run'",
        "code": "NOT_FOUND",
        "hint": "list them with `valuerank runs list` or GET /api/runs",
    }
    denied = await _valuerank(
        server.env(tmp_path, **{API_TOKEN_ENV: "vrt_wrong"}), "runs", "status", server.run_id
    )
    assert (denied.code, denied.stdout) == (1, "")
    assert "error:" in denied.stderr and f"hint: set {API_TOKEN_ENV}" in denied.stderr
    assert "vrt_wrong" not in denied.stderr
    assert denied == await asyncio.to_thread(
        full_cli,
        server.env(tmp_path, **{API_TOKEN_ENV: "vrt_wrong"}),
        "runs",
        "status",
        server.run_id,
    )


async def test_help_and_other_forms_go_to_thefull_cli(server: Server, tmp_path: Path) -> None:
    env = server.env(tmp_path)
    helped = await _valuerank(env, "runs", "status", "--help")
    assert helped.code == 0 and "Usage: valuerank runs status" in helped.stdout
    assert "VALUERANK_API_URL" in helped.stdout  # says who answers
    # `--` is not the fast path's: the full CLI answers it, from the same server.
    full = await _valuerank(env, "runs", "status", "--json", "--", server.run_id)
    assert full.code == 0 and json.loads(full.stdout)["id"] == server.run_id
    assert not (tmp_path / UNTOUCHED_DB).exists()


async def test_the_fast_path_loads_neither_typer_nor_the_database_stack(
    server: Server, tmp_path: Path
) -> None:
    probe = (
        "import os, sys\n"
        "from valuerank.entry import answer_fast\n"
        f"code = answer_fast(['runs', 'status', {server.run_id!r}, '--json'], os.environ)\n"
        f"loaded = sorted(m for m in {NOT_FOR_THE_FAST_PATH!r} if m in sys.modules)\n"
        "import json\n"
        "print(json.dumps([code, loaded]))"
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", probe, env=server.env(tmp_path), stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate()
    assert json.loads(out.decode().strip().splitlines()[-1]) == [0, []]
