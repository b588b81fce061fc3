"""The real app on a real uvicorn server on 127.0.0.1 (ephemeral port), a real database, and
httpx clients; seed data, users and tokens made through the services.

`live.client()` is an admin of the default organisation (the API token `TOKEN`);
`await live.account(org, role)` makes a member of any organisation with a token of its own,
and `live.client_for(org, role)` a client acting as one. The app runs with rate limits off
(tests of rate limits start their own with `live_server(...)`).
"""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import update
from tests.servers import running
from tests.waiting import run_report_when

import valuerank
from valuerank.accounts import Role, add_member, create_token
from valuerank.api import create_app
from valuerank.api.context import AppContext, app_context
from valuerank.config import Settings
from valuerank.db import Database
from valuerank.db.tables import runs
from valuerank.definitions.service import import_definition
from valuerank.formats.transcript_md import Transcript, Turn
from valuerank.orgs import ensure_org
from valuerank.runs.config import RunConfig
from valuerank.runs.progress import RunReport
from valuerank.runs.records import TranscriptRecord, insert_transcript
from valuerank.runs.service import Run, create_run, run_scenario_ids

# The default organisation's admin token (an API token of the real format, provisioned by the
# `live` fixture through the tokens service).
TOKEN = "vrt_test-token-0123456789-abcdefghijklmnopqrstuvwxyz"
ADMIN_EMAIL = "admin@example.test"
DEMO = Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md"


def api_settings(**overrides: Any) -> Settings:
    """Settings of a test app: nothing opened without credentials, no rate limits, no Redis
    (whatever this machine's environment says), unless overridden."""
    values: dict[str, Any] = {
        "auto_login": False,
        "public_read_prefixes": (),
        "rate_limits_enabled": False,
        "redis_url": None,
        "webhook_private_targets": False,
    }
    values.update(overrides)
    return Settings(**values)


async def provision_admin(
    db: Database, org_id: str, token: str = TOKEN, email: str = ADMIN_EMAIL
) -> str:
    """An admin of `org_id` whose API token is `token`; returns the user id."""
    async with db.transaction() as conn:
        member = await add_member(conn, org_id, email, Role.ADMIN, name="Test admin")
        await create_token(conn, org_id, member.user.id, name="tests", token=token)
    return member.user.id


@dataclass(frozen=True)
class Account:
    """A member of an organisation with an API token of their own."""

    org_id: str
    org_slug: str
    user_id: str
    email: str
    role: Role
    token: str


@dataclass
class Live:
    url: str
    app: FastAPI

    @property
    def context(self) -> AppContext:
        return app_context(self.app)

    @property
    def db(self) -> Database:
        return self.context.db

    @property
    def org_id(self) -> str:
        """The default organisation (the one `TOKEN` administers)."""
        return self.context.org_id

    def client(
        self, *, token: str | None = TOKEN, headers: dict[str, str] | None = None, **kwargs: Any
    ) -> httpx.AsyncClient:
        headers = dict(headers or {})
        if token:
            headers["Authorization"] = f"Bearer {token}"
        # verify=False: plain HTTP on loopback; it skips loading CA certificates (~0.25 s each).
        return httpx.AsyncClient(
            base_url=self.url, headers=headers, timeout=10, verify=False, **kwargs
        )

    async def account(
        self, org: str = "default", role: Role | str = Role.ADMIN, *, email: str | None = None
    ) -> Account:
        """A new member of organisation `org` (slug; created if needed) with `role` and a
        token, made through the accounts services."""
        chosen = Role(role)
        address = email or f"{chosen.value}-{uuid.uuid4().hex[:10]}@{org}.test"
        async with self.db.transaction() as conn:
            org_id = await ensure_org(conn, org)
            member = await add_member(conn, org_id, address, chosen)
            new = await create_token(conn, org_id, member.user.id, name="tests")
        return Account(org_id, org, member.user.id, address, chosen, new.token)

    async def run_ended(self, org_id: str, run_id: str) -> RunReport:
        """The run's report once it has ended, read again whenever this app's own event
        listener hears of the run (PostgreSQL's NOTIFY; it polls SQLite)."""
        waker = self.context.waker
        with waker.subscribe(run_id) as woken:
            return await run_report_when(
                self.db, org_id, run_id, wake=woken, interval=waker.poll_seconds
            )

    @asynccontextmanager
    async def client_for(
        self, org: str = "default", role: Role | str = Role.ADMIN, **kwargs: Any
    ) -> AsyncIterator[httpx.AsyncClient]:
        """A client acting as a new member of `org` with `role` (its `.account` attribute
        says who)."""
        account = await self.account(org, role)
        async with self.client(token=account.token, **kwargs) as client:
            client.account = account  # type: ignore[attr-defined]
            yield client


@pytest.fixture
async def live(db: Database, org_id: str) -> AsyncIterator[Live]:
    await provision_admin(db, org_id)
    app = create_app(db, org_id=org_id, settings=api_settings())
    async with running(app) as url:
        yield Live(url, app)


LiveServer = Callable[..., Any]


@pytest.fixture
def live_server(db: Database, org_id: str) -> LiveServer:
    """`async with live_server(**settings) as live:` another app on the same database, with
    these settings (see `api_settings`); `TOKEN` works on it once `live` or
    `provision_admin` has made it."""

    @asynccontextmanager
    async def start(**overrides: Any) -> AsyncIterator[Live]:
        app = create_app(db, org_id=org_id, settings=api_settings(**overrides))
        async with running(app) as url:
            yield Live(url, app)

    return start


async def import_demo(db: Database, org_id: str) -> str:
    async with db.transaction() as conn:
        stored, _ = await import_definition(conn, org_id, DEMO.read_text(), source_file=DEMO.name)
    return stored.version.id


MakeRun = Callable[..., Awaitable[Run]]


async def make_demo_run(
    db: Database,
    org: str,
    *,
    models: tuple[str, ...] = ("scripted:utilitarian",),
    name: str = "",
    decisions: dict[str, list[int | None]] | None = None,
    summary: str | None = None,
) -> Run:
    """A pending run of the demo definition in `org`; `decisions` adds transcripts per model."""
    definition_id = await import_demo(db, org)
    async with db.transaction() as conn:
        created = await create_run(
            conn,
            org,
            definition_id,
            RunConfig(models=models, sample_percentage=10, sample_seed=0),
            name=name,
        )
        run = created.run
        scenario_ids = await run_scenario_ids(conn, run.id)
        for model, codes in (decisions or {}).items():
            for i, code in enumerate(codes):
                sid = scenario_ids[i % len(scenario_ids)]
                transcript = Transcript(
                    run_id=run.cli_run_id,
                    scenario_id=sid,
                    target_model=model,
                    subject="demo",
                    turns=(Turn(1, "scenario", "Decide.", f"Rating: {code}"),),
                )
                record = TranscriptRecord(
                    transcript=transcript,
                    model=model,
                    sample_index=i // len(scenario_ids),
                    cost_usd=0.001,
                    decision_code=code,
                    decision_reason=None if code is not None else "refusal",
                    synthetic=model.startswith("scripted:"),
                )
                await insert_transcript(conn, org, run.id, record)
        if summary is not None:
            await conn.execute(update(runs).where(runs.c.id == run.id).values(summary=summary))
    return run


@pytest.fixture
def make_run(db: Database) -> MakeRun:
    """`await make_run(org, …)`: `make_demo_run` on the test's database."""
    return functools.partial(make_demo_run, db)


def _assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body: dict[str, Any] = response.json()
    assert body["success"] is False
    assert body["code"] == code
    assert isinstance(body["error"], str) and body["error"]
    assert body["timestamp"].endswith("Z")
    return body


async def _sse_messages(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """Parse a text/event-stream response into {event, id, data} messages."""
    message: dict[str, Any] = {}
    async for line in response.aiter_lines():
        if not line:
            if "data" in message:
                message["data"] = json.loads(message["data"])
                message.setdefault("event", "message")
                yield message
            message = {}
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            message[field] = value[1:] if value.startswith(" ") else value


@pytest.fixture
def assert_error() -> Callable[[httpx.Response, int, str], dict[str, Any]]:
    """Check an error envelope: status, code, message, timestamp; returns the body."""
    return _assert_error


@pytest.fixture
def sse_messages() -> Callable[[httpx.Response], AsyncIterator[dict[str, Any]]]:
    return _sse_messages


@pytest.fixture
def serve_app() -> Callable[[Any], Any]:
    """`async with serve_app(asgi_app) as base_url:` — any ASGI app on a real server."""
    return running
