"""`valuerank runs list|results` with VALUERANK_API_URL set: the server answers (the real API
on loopback), with what the database path prints, for the token's organisation only."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.api.conftest import TOKEN, api_settings, make_demo_run, provision_admin
from tests.cli_against_server import UNTOUCHED_DB, database_env, full_cli, user_env
from tests.conftest import TestDatabase
from tests.servers import running

from valuerank.accounts import Role, add_member, create_token
from valuerank.api import create_app
from valuerank.db import Database
from valuerank.orgs import ensure_org


@dataclass
class Setup:
    url: str
    run_ids: list[str]
    database: TestDatabase
    outsider_token: str


@pytest.fixture
async def setup(db: Database, org_id: str, database_url: TestDatabase) -> AsyncIterator[Setup]:
    await provision_admin(db, org_id)
    runs = [
        await make_demo_run(
            db, org_id, name=f"run {i}", decisions={"scripted:utilitarian": [i + 1]}
        )
        for i in range(3)
    ]
    async with db.transaction() as conn:  # a member of another organisation, with a token
        other = await ensure_org(conn, "elsewhere")
        member = await add_member(conn, other, "someone@elsewhere.test", Role.ADMIN)
        outsider = (await create_token(conn, other, member.user.id, name="t")).token
    async with running(create_app(db, org_id=org_id, settings=api_settings())) as url:
        yield Setup(url, [r.id for r in runs], database_url, outsider)


def _envs(
    setup: Setup, tmp_path: Path, token: str = TOKEN
) -> tuple[dict[str, str], dict[str, str]]:
    """(asking the server, reading the database)."""
    return user_env(setup.url, token, tmp_path), database_env(setup.database.url)


async def _cli(env: dict[str, str], *args: str) -> tuple[int, str]:
    answer = await asyncio.to_thread(full_cli, env, *args)
    return answer.code, answer.stdout


async def test_list_and_results_from_the_server_match_the_database(
    setup: Setup, tmp_path: Path
) -> None:
    remote, local = _envs(setup, tmp_path)
    for args in (("runs", "list", "--json"), ("runs", "results", setup.run_ids[1], "--json")):
        code, asked = await _cli(remote, *args)
        assert code == 0, asked
        code, read = await _cli(local, *args)
        assert code == 0, read
        asked_data, read_data = json.loads(asked), json.loads(read)
        if isinstance(read_data, list):  # list: each run has the database's fields and more
            assert [{k: a[k] for k in r} for a, r in zip(asked_data, read_data, strict=True)] == (
                read_data
            )
            assert {r["id"] for r in asked_data} == set(setup.run_ids)
        else:
            assert asked_data == read_data
            assert asked_data["results"][0]["decision_counts"] == {"2": 1}
    # In words, the same tables.
    for words in (("runs", "list"), ("runs", "results", setup.run_ids[0])):
        assert await _cli(remote, *words) == await _cli(local, *words)
    assert not (tmp_path / UNTOUCHED_DB).exists()


async def test_the_tokens_organisation_is_all_the_server_shows(
    setup: Setup, tmp_path: Path
) -> None:
    remote, _ = _envs(setup, tmp_path, token=setup.outsider_token)
    code, out = await _cli(remote, "runs", "list", "--json")
    assert (code, json.loads(out)) == (0, [])
    code, out = await _cli(remote, "runs", "results", setup.run_ids[0], "--json")
    assert code == 1 and json.loads(out)["code"] == "NOT_FOUND"
    remote, _ = _envs(setup, tmp_path, token="vrt_wrong")
    code, out = await _cli(remote, "runs", "list", "--json")
    assert code == 1 and json.loads(out)["code"] == "UNAUTHORIZED"
