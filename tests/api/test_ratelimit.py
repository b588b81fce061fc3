"""Rate limits per client and endpoint class on real servers: 429 RATE_LIMITED with
Retry-After; counters in memory per process, or shared by several apps through a real Redis
(127.0.0.1:6379, VALUERANK_TEST_REDIS_URL)."""

from __future__ import annotations

import logging
import os
import socket
import uuid
from typing import Any

import pytest
from fastapi import WebSocket
from tests.conftest import is_ci
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from valuerank.accounts import Role, add_member
from valuerank.api import create_app
from valuerank.api.deps import Principal, Viewer
from valuerank.api.ratelimit import EndpointClass, client_key, endpoint_class

from .conftest import TOKEN, Live, api_settings, provision_admin

sqlite_only = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
REDIS_URL = os.environ.get("VALUERANK_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
LIMITED = {
    "rate_limits_enabled": True,
    "rate_limit_standard": "3/minute",
    "rate_limit_multi_model": "2/minute",
    "rate_limit_models": "5/minute",
}


def _require_redis() -> None:
    host, port = REDIS_URL.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=2) as sock:
            sock.sendall(b"PING\r\n")
            assert sock.recv(16).startswith(b"+PONG")
    except (OSError, AssertionError) as exc:
        message = f"Redis unreachable at {REDIS_URL}: {exc}"
        if is_ci():
            pytest.fail(message + " (CI requires Redis)")
        pytest.skip(message)


def _assert_limited(response: Any, assert_error: Any) -> int:
    body = assert_error(response, 429, "RATE_LIMITED")
    wait = int(response.headers["retry-after"])
    assert 1 <= wait <= 60, wait
    assert f"{wait} s" in body["error"]
    return wait


def test_endpoint_classes_and_clients() -> None:
    assert endpoint_class("/api/runs") is EndpointClass.STANDARD
    assert endpoint_class("/") is EndpointClass.STANDARD
    assert endpoint_class("/api/assumptions/multi-model/1/tag") is EndpointClass.MULTI_MODEL
    assert endpoint_class("/api/assumptions/consensus/7") is EndpointClass.MULTI_MODEL
    assert endpoint_class("/api/assumptions/models") is EndpointClass.MODELS
    assert endpoint_class("/api/models") is EndpointClass.MODELS
    assert endpoint_class("/api/models/openai:gpt-4.1") is EndpointClass.MODELS
    assert endpoint_class("/api/modelsx") is EndpointClass.STANDARD
    assert endpoint_class("/health") is None and endpoint_class("/static/app.css") is None
    scope = {"client": ("192.0.2.7", 1234)}
    token = Principal(org_id="o", role=Role.VIEWER, user_id="u", token_id="t")
    session = Principal(org_id="o", role=Role.VIEWER, user_id="u", via="session", session_id="s")
    # A session opened from an API token (`/?token=`) still counts apart from that token.
    jumped = Principal(
        org_id="o", role=Role.VIEWER, user_id="u", via="session", token_id="t", session_id="j"
    )
    local = Principal(org_id="o", role=Role.ADMIN, user_id="u", via="local")
    anonymous = Principal(org_id="o", role=Role.VIEWER, via="anonymous")
    assert client_key(token, scope) == "token:t"
    assert client_key(session, scope) == "session:s"
    assert client_key(jumped, scope) == "session:j"
    assert client_key(local, scope) == "user:u"
    assert client_key(anonymous, scope) == "addr:192.0.2.7"
    assert client_key(None, {}) == "addr:unknown"


@sqlite_only
async def test_each_client_and_class_has_its_limit(
    live: Live, live_server: Any, assert_error: Any
) -> None:
    other = await live.account("default", Role.VIEWER)
    async with live_server(**LIMITED) as limited:
        async with limited.client() as admin, limited.client(token=other.token) as viewer:
            for _ in range(3):
                assert (await admin.get("/api/runs")).status_code == 200
            _assert_limited(await admin.get("/api/runs"), assert_error)
            _assert_limited(await admin.post("/api/tokens", json={}), assert_error)
            # Another client has its own budget; /health is never counted.
            assert (await viewer.get("/api/runs")).status_code == 200
            for _ in range(5):
                assert (await admin.get("/health")).status_code == 200
            # Other classes have their own budgets (unknown routes there are 404s, counted).
            for _ in range(2):
                multi = await admin.get("/api/assumptions/multi-model/1/tag")
                assert multi.status_code == 404
            _assert_limited(await admin.get("/api/assumptions/consensus/1"), assert_error)
            for _ in range(5):  # /api/models shares the models class with the seed's path
                assert (await admin.get("/api/models")).status_code == 200
            _assert_limited(await admin.get("/api/assumptions/models"), assert_error)
        # A request with no credential is not a guess: refused 401, never counted…
        async with limited.client(token=None) as anonymous:
            for _ in range(5):
                assert_error(await anonymous.get("/api/runs"), 401, "UNAUTHORIZED")
        # …while a wrong Bearer token counts against the address: the 4th guess is a 429.
        async with limited.client(token="vrt_" + "z" * 43) as guesser:
            for _ in range(3):
                assert_error(await guesser.get("/api/runs"), 401, "UNAUTHORIZED")
            _assert_limited(await guesser.get("/api/runs"), assert_error)
    async with live.client() as unlimited:  # the default test app has rate limits off
        for _ in range(5):
            assert (await unlimited.get("/api/runs")).status_code == 200


@sqlite_only
async def test_a_browser_session_has_a_budget_apart_from_its_token(
    live: Live, live_server: Any, assert_error: Any
) -> None:
    async with live_server(**LIMITED) as limited:
        async with limited.client() as script:  # an API client spends the token's budget
            for _ in range(3):
                assert (await script.get("/api/runs")).status_code == 200
            _assert_limited(await script.get("/api/runs"), assert_error)
        # A browser signed in with that very token (`/?token=`) still has its own budget,
        # and each browser session one of its own.
        for _ in range(2):
            async with limited.client(token=None) as browser:
                opened = await browser.get("/", params={"token": TOKEN})
                assert opened.status_code == 303 and browser.cookies
                for _ in range(3):
                    assert (await browser.get("/api/runs")).status_code == 200
                _assert_limited(await browser.get("/api/runs"), assert_error)


@sqlite_only
async def test_failed_logins_are_throttled(live: Live, live_server: Any, assert_error: Any) -> None:
    password = "correct horse battery staple"
    async with live.db.transaction() as conn:
        await add_member(conn, live.org_id, "ada@example.org", "viewer", password=password)
    async with (
        live_server(rate_limits_enabled=True, rate_limit_login="3/minute") as server,
        server.client(token=None) as browser,
    ):
        good = {"email": "ada@example.org", "password": password}
        assert (await browser.post("/api/auth/login", json=good)).status_code == 200
        for _ in range(3):
            wrong = await browser.post(
                "/api/auth/login", json={**good, "password": "guess-" + uuid.uuid4().hex}
            )
            assert_error(wrong, 401, "INVALID_CREDENTIALS")
        # Over the budget the right password is refused too, without being checked.
        _assert_limited(await browser.post("/api/auth/login", json=good), assert_error)
        # So is another account from the same address.
        other = {"email": "someone@example.org", "password": password}
        _assert_limited(await browser.post("/api/auth/login", json=other), assert_error)


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_counters_are_shared_through_redis_across_two_apps(
    db: Any, org_id: str, live_server: Any, assert_error: Any
) -> None:
    _require_redis()
    await provision_admin(db, org_id)
    shared = {
        **LIMITED,
        "rate_limit_standard": "4/minute",
        "redis_url": REDIS_URL,
        "rate_limit_key_prefix": f"test-{uuid.uuid4().hex}",
    }
    async with (
        live_server(**shared) as first,
        live_server(**shared) as second,
        first.client() as a,
        second.client() as b,
    ):
        statuses = [(await (a if i % 2 else b).get("/api/runs")).status_code for i in range(4)]
        assert statuses == [200] * 4
        # The fifth request is over the shared budget on either replica.
        _assert_limited(await a.get("/api/runs"), assert_error)
        _assert_limited(await b.get("/api/runs"), assert_error)
    # In memory (no Redis), each process counts alone: twice the budget gets through.
    alone = {**LIMITED, "rate_limit_standard": "4/minute"}
    async with (
        live_server(**alone) as first,
        live_server(**alone) as second,
        first.client() as a,
        second.client() as b,
    ):
        for _ in range(4):
            assert (await a.get("/api/runs")).status_code == 200
            assert (await b.get("/api/runs")).status_code == 200
        _assert_limited(await a.get("/api/runs"), assert_error)


@sqlite_only
async def test_a_redis_outage_falls_back_to_memory(
    live: Live, live_server: Any, assert_error: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # nothing listens there once closed
    caplog.set_level(logging.WARNING, logger="valuerank.api")
    async with (
        live_server(**LIMITED, redis_url=f"redis://127.0.0.1:{port}/0") as server,
        server.client() as admin,
    ):
        for _ in range(3):
            assert (await admin.get("/api/runs")).status_code == 200
        _assert_limited(await admin.get("/api/runs"), assert_error)
    warnings = [r.getMessage() for r in caplog.records if "counting in memory" in r.getMessage()]
    assert len(warnings) == 1  # once a minute, not once a request


@sqlite_only
async def test_websocket_handshakes_over_the_limit_get_429(
    db: Any, org_id: str, serve_app: Any
) -> None:
    await provision_admin(db, org_id)
    app = create_app(db, org_id=org_id, settings=api_settings(**LIMITED))

    async def hello(ws: WebSocket, ctx: Viewer) -> None:
        await ws.accept()
        await ws.send_text(ctx.principal.via)
        await ws.close()

    app.add_api_websocket_route("/ws/hello", hello)
    async with serve_app(app) as base:
        url = base.replace("http://", "ws://") + "/ws/hello"
        headers = {"Authorization": f"Bearer {TOKEN}"}
        for _ in range(3):
            async with connect(url, additional_headers=headers) as ws:
                assert await ws.recv() == "token"
        with pytest.raises(InvalidStatus) as refused:
            async with connect(url, additional_headers=headers):
                pass
        assert refused.value.response.status_code == 429
        assert 1 <= int(refused.value.response.headers["retry-after"]) <= 60
