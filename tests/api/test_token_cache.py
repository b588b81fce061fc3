"""The API token cache (api/token_cache.py): on PostgreSQL a known token is not read from the
database again, yet a revocation, a role change or a removal made anywhere (another process,
plain SQL) takes effect within a NOTIFY's delay, and at once when made through this API. With
its listener not connected, or on SQLite, every request reads the token."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from sqlalchemy import event
from tests.waiting import wait_until_async

from valuerank.accounts import Role, add_member, create_token
from valuerank.api.listener import EventWaker
from valuerank.api.token_cache import TokenCache
from valuerank.db import Database

from .conftest import TOKEN, Live

# Seconds for a NOTIFY to arrive: milliseconds, at load 10 too. The cache keeps a token ten
# times as long (`_cached`), so a change seen within FAST_ENOUGH was told by a NOTIFY.
FAST_ENOUGH = 30.0

postgresql = pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
sqlite = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


@contextlib.contextmanager
def token_reads(db: Database) -> Iterator[list[str]]:
    """The SQL statements that read api_tokens while the block runs."""
    seen: list[str] = []

    def note(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "api_tokens" in statement:
            seen.append(statement)

    event.listen(db.engine.sync_engine, "before_cursor_execute", note)
    try:
        yield seen
    finally:
        event.remove(db.engine.sync_engine, "before_cursor_execute", note)


def _dsn(db: Database) -> str:
    return db.url.url.set(drivername="postgresql").render_as_string(hide_password=False)


async def _sql(db: Database, statement: str, *params: Any) -> None:
    """`statement` from a connection of its own: as another process or an operator would."""
    async with await psycopg.AsyncConnection.connect(_dsn(db), autocommit=True) as other:
        await other.execute(statement, params)


async def _cached(live: Live, client: Any) -> None:
    """Once the listener listens, one request puts the client's token in the cache (for far
    longer than any wait of these tests)."""
    live.context.tokens.ttl_seconds = 10 * FAST_ENOUGH
    assert (await client.get("/api/auth/me")).status_code == 200
    await asyncio.wait_for(live.context.waker.connected.wait(), FAST_ENOUGH)
    assert (await client.get("/api/auth/me")).status_code == 200
    assert len(live.context.tokens) >= 1


async def _until(client: Any, path: str, status: int) -> float:
    """Seconds until `path` answers `status` (fails after FAST_ENOUGH)."""
    started = time.monotonic()
    await wait_until_async(
        lambda: client.get(path),
        what=f"{path} to answer {status}",
        done=lambda answer: answer.status_code == status,
        timeout=FAST_ENOUGH,
        interval=0.01,
    )
    return time.monotonic() - started


@postgresql
async def test_a_known_token_is_not_read_again(live: Live) -> None:
    async with live.client() as client:
        await _cached(live, client)
        with token_reads(live.db) as reads:
            for _ in range(3):
                assert (await client.get("/api/auth/me")).status_code == 200
        assert reads == []
        with token_reads(live.db) as reads:
            refused = await client.get(
                "/api/auth/me", headers={"Authorization": "Bearer vrt_" + "x" * 43}
            )
        assert refused.status_code == 401
        assert len(reads) == 1  # an unknown token is read every time (and never cached)


@postgresql
async def test_revoked_by_another_process_refused_within_a_notify(live: Live) -> None:
    async with live.client() as client:
        await _cached(live, client)
        await _sql(live.db, "UPDATE api_tokens SET revoked_at = now()")
        assert await _until(client, "/api/auth/me", 401) < FAST_ENOUGH
        assert len(live.context.tokens) == 0


@postgresql
async def test_role_change_and_removal_by_sql_apply_within_a_notify(live: Live) -> None:
    async with live.client_for("default", Role.ADMIN) as client:
        user_id = client.account.user_id  # type: ignore[attr-defined]
        await _cached(live, client)
        assert (await client.get("/api/webhooks")).status_code == 200  # admin only
        await _sql(live.db, "UPDATE memberships SET role = 'viewer' WHERE user_id = %s", user_id)
        await _until(client, "/api/webhooks", 403)
        await _sql(live.db, "DELETE FROM memberships WHERE user_id = %s", user_id)
        await _until(client, "/api/auth/me", 401)


@postgresql
async def test_revoked_through_the_api_refused_on_the_next_request(live: Live) -> None:
    async with live.client_for("default", Role.MEMBER) as client:
        await _cached(live, client)
        mine = (await client.get("/api/tokens")).json()["data"]["tokens"]
        assert (await client.delete(f"/api/tokens/{mine[0]['id']}")).status_code == 200
        assert (await client.get("/api/auth/me")).status_code == 401


@postgresql
async def test_use_of_a_token_sends_no_notice(db: Database, org_id: str) -> None:
    """last_used_at changes once a minute per token: that must not empty every cache."""
    async with db.transaction() as conn:
        member = await add_member(conn, org_id, "a@example.test", Role.ADMIN)
        await create_token(conn, org_id, member.user.id, token=TOKEN)
    async with await psycopg.AsyncConnection.connect(_dsn(db), autocommit=True) as listener:
        await listener.execute("LISTEN valuerank_auth")
        await _sql(db, "UPDATE api_tokens SET last_used_at = now()")
        await _sql(db, "UPDATE api_tokens SET revoked_at = now()")
        await _sql(db, "UPDATE memberships SET role = 'viewer'")
        payloads = []
        async for notice in listener.notifies(timeout=2.0, stop_after=2):
            payloads.append(notice.payload)
    assert payloads == ["api_tokens", "memberships"]


@postgresql
async def test_not_trusted_while_the_listener_is_not_connected(db: Database, org_id: str) -> None:
    async with db.transaction() as conn:
        member = await add_member(conn, org_id, "a@example.test", Role.ADMIN)
        await create_token(conn, org_id, member.user.id, token=TOKEN)
    stopped = asyncio.Event()
    stopped.set()  # the listener never starts: never connected
    waker = EventWaker(db, stopping=stopped)
    tokens = TokenCache(db, lambda: waker, ttl_seconds=30)
    with token_reads(db) as reads:
        for _ in range(3):
            identity = await tokens.authenticate(TOKEN)
            assert identity is not None and identity.role is Role.ADMIN
    assert len(reads) == 3
    assert len(tokens) == 0


@postgresql
async def test_a_token_expiring_within_the_ttl_is_not_kept(live: Live) -> None:
    async with live.db.transaction() as conn:
        member = await add_member(conn, live.org_id, "soon@example.test", Role.VIEWER)
        soon = await create_token(conn, live.org_id, member.user.id, expires_in_days=1)
    live.context.tokens.ttl_seconds = 2 * 86400  # longer than the token has left
    async with live.client(token=soon.token) as client:
        assert (await client.get("/api/auth/me")).status_code == 200
        await asyncio.wait_for(live.context.waker.connected.wait(), FAST_ENOUGH)
        with token_reads(live.db) as reads:
            assert (await client.get("/api/auth/me")).status_code == 200
        assert len(reads) == 1
        assert len(live.context.tokens) == 0


@sqlite
async def test_sqlite_reads_the_token_every_time(live: Live) -> None:
    async with live.client() as client:
        with token_reads(live.db) as reads:
            for _ in range(3):
                assert (await client.get("/api/auth/me")).status_code == 200
    assert len(reads) == 3
    assert len(live.context.tokens) == 0
