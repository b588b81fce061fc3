"""Authentication on a real server: API tokens (Bearer), the browser's one-time `?token=` jump,
password sessions with CSRF protection, auto-login of the local admin, public reads; /health
and the login are the only open routes."""

from __future__ import annotations

import logging
from http.cookies import SimpleCookie
from logging.handlers import BufferingHandler
from typing import Any

import pytest
import websockets
from fastapi import WebSocket
from pydantic import ValidationError
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from valuerank.accounts import LOCAL_ADMIN_EMAIL, Role, add_member
from valuerank.api import create_app
from valuerank.api.auth import (
    RedactTokenFilter,
    is_local_request,
    is_loopback_host,
    redact,
    same_origin,
)
from valuerank.api.deps import Member, Viewer
from valuerank.config import Settings

from .conftest import TOKEN, Live, api_settings

sqlite_only = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
PASSWORD = "correct horse battery staple"


def _cookies(response: Any) -> dict[str, Any]:
    jar: SimpleCookie = SimpleCookie()
    for raw in response.headers.get_list("set-cookie"):
        jar.load(raw)
    return dict(jar.items())


def _other(secret: str) -> str:
    """`secret` with its last character changed."""
    return secret[:-1] + ("A" if secret[-1] != "A" else "B")


def _raw_cookie(response: Any, prefix: str) -> str:
    (raw,) = [c for c in response.headers.get_list("set-cookie") if c.startswith(prefix)]
    return str(raw)


@sqlite_only
async def test_health_login_and_static_files_are_the_only_open_routes(
    live: Live, assert_error: Any
) -> None:
    async with live.client(token=None) as anonymous:
        health = await anonymous.get("/health")
        assert health.status_code == 200 and health.json()["data"]["status"] == "ok"
        for path in ("/api/runs", "/api/auth/me", "/metrics", "/openapi.json", "/", "/nope"):
            response = await anonymous.get(path)
            error = assert_error(response, 401, "UNAUTHORIZED")
            assert error["error"] == "authentication required"
            assert "valuerank tokens create" in error["hint"]
            assert response.headers["www-authenticate"] == "Bearer"
        # The login route is open (and says what is wrong with the body).
        assert_error(await anonymous.post("/api/auth/login", json={}), 422, "VALIDATION_ERROR")
        # A browser asking for a page is sent to the sign-in page, which is open, and which
        # says how to sign in with a token too; the static files it needs are open.
        page = await anonymous.get("/runs/abc", headers={"Accept": "text/html"})
        assert page.status_code == 303 and page.headers["location"] == "/login?next=%2Fruns%2Fabc"
        login = await anonymous.get("/login", headers={"Accept": "text/html"})
        assert login.status_code == 200 and "?token=" in login.text
        assert (await anonymous.get("/static/app.css")).status_code == 200
        assert_error(await anonymous.post("/static/app.css"), 401, "UNAUTHORIZED")

    for wrong in ("wrong-" + TOKEN, TOKEN[:-1], TOKEN + "x", "vrt_" + "a" * 43):
        async with live.client(token=wrong) as client:
            error = assert_error(await client.get("/api/runs"), 401, "UNAUTHORIZED")
            assert error["error"] == "invalid credentials"

    async with live.client() as client:
        assert (await client.get("/api/runs")).status_code == 200
        assert (await client.get("/openapi.json")).json()["info"]["title"] == "ValueRank"
        assert_error(await client.get("/nope"), 404, "NOT_FOUND")  # authenticated: a 404
        me = (await client.get("/api/auth/me")).json()["data"]
        assert me["via"] == "token" and me["role"] == "admin" and me["org"]["slug"] == "default"
        assert me["user"]["email"] == "admin@example.test" and me["csrf_token"] is None


async def test_revoking_a_token_takes_effect_at_once(live: Live, assert_error: Any) -> None:
    account = await live.account("default", Role.VIEWER)
    async with live.client(token=account.token) as viewer, live.client() as admin:
        assert (await viewer.get("/api/runs")).status_code == 200
        mine = (await viewer.get("/api/tokens")).json()["data"]["tokens"]
        assert [t["status"] for t in mine] == ["active"] and mine[0]["last_used_at"]
        revoked = await admin.delete(f"/api/tokens/{mine[0]['id']}")
        assert revoked.json()["data"]["status"] == "revoked"
        # The very next request is refused: no cache between the database and the check.
        assert_error(await viewer.get("/api/runs"), 401, "UNAUTHORIZED")
        # The role is read at each request too: a promotion applies at once.
        other = await live.account("default", Role.VIEWER)
        async with live.client(token=other.token) as second:
            assert_error(await second.post("/api/tokens", json={"user_id": account.user_id}),
                         403, "FORBIDDEN")  # fmt: skip
            await admin.patch(f"/api/users/{other.user_id}", json={"role": "admin"})
            made = await second.post("/api/tokens", json={"user_id": other.user_id})
            assert made.status_code == 201


@sqlite_only
async def test_the_one_time_jump_from_a_printed_url(live: Live, assert_error: Any) -> None:
    port = live.url.rsplit(":", 1)[1]
    async with live.client(token=None) as browser:
        login = await browser.get("/", params={"token": TOKEN, "view": "all"})
        assert login.status_code == 303
        assert login.headers["location"] == "/?view=all"  # the token is gone from the URL
        assert login.headers["cache-control"] == "no-store"
        cookies = _cookies(login)
        session, csrf = cookies[f"valuerank_session_{port}"], cookies[f"valuerank_csrf_{port}"]
        raw = _raw_cookie(login, "valuerank_session")
        assert "HttpOnly" in raw and "samesite=strict" in raw.lower() and "Path=/" in raw
        assert "Secure" not in raw  # plain HTTP on loopback
        assert "HttpOnly" not in _raw_cookie(login, "valuerank_csrf")  # the page reads it
        assert TOKEN not in str(login.headers) and TOKEN not in login.text
        assert session.value != TOKEN and csrf.value

    # The cookie alone opens pages and the API (EventSource and fetch send no header).
    jar = {f"valuerank_session_{port}": session.value}
    async with live.client(token=None, cookies=jar) as browser:
        page = await browser.get("/")
        assert page.status_code == 200 and "<h1>Runs</h1>" in page.text
        me = (await browser.get("/api/auth/me")).json()["data"]
        assert me["via"] == "session" and me["role"] == "admin" and me["token_id"]
        assert me["csrf_token"] == csrf.value
        assert (await browser.get("/static/run.js")).status_code == 200

    async with live.client(token=None, cookies={f"valuerank_session_{port}": "x" * 43}) as forged:
        error = assert_error(await forged.get("/api/runs"), 401, "UNAUTHORIZED")
        assert error["error"] == "the session has expired or was signed out"
    async with live.client(token=None, cookies={"valuerank_session_1": session.value}) as other:
        assert_error(await other.get("/api/runs"), 401, "UNAUTHORIZED")  # another server's

    async with live.client(token=None) as browser:
        bad = await browser.get("/runs/x", params={"token": "guess"})
        body = assert_error(bad, 401, "UNAUTHORIZED")
        assert body["error"] == "invalid access token" and "guess" not in bad.text
        assert "set-cookie" not in bad.headers
        # No open redirect: `//host` stays on this server.
        evil = await browser.get(f"{live.url}//evil.example/x?token={TOKEN}")
        assert evil.status_code == 303 and evil.headers["location"] == "/evil.example/x"
    async with live.client(token=None) as browser:
        # The query token logs in only on GET/HEAD; a POST with it is just unauthenticated.
        assert_error(await browser.post("/api/runs", params={"token": TOKEN}), 401, "UNAUTHORIZED")

    # A session opened from a token ends with the token.
    async with live.client() as admin:
        (token_row,) = [
            t for t in (await admin.get("/api/tokens")).json()["data"]["tokens"]
            if t["name"] == "tests"
        ]  # fmt: skip
        await admin.delete(f"/api/tokens/{token_row['id']}")
    async with live.client(token=None, cookies=jar) as browser:
        assert_error(await browser.get("/api/runs"), 401, "UNAUTHORIZED")


@sqlite_only
async def test_cookies_are_secure_over_https(live: Live) -> None:
    """Behind a TLS proxy on this host (uvicorn trusts 127.0.0.1's X-Forwarded-Proto)."""
    async with live.client(token=None, headers={"X-Forwarded-Proto": "https"}) as browser:
        login = await browser.get("/", params={"token": TOKEN})
        assert login.status_code == 303
        for prefix in ("valuerank_session", "valuerank_csrf"):
            assert "Secure" in _raw_cookie(login, prefix)


async def test_password_login_csrf_and_logout(live: Live, assert_error: Any) -> None:
    async with live.db.transaction() as conn:
        await add_member(conn, live.org_id, "ada@example.org", "member", password=PASSWORD)
    port = live.url.rsplit(":", 1)[1]
    async with live.client(token=None) as browser:
        wrong = await browser.post(
            "/api/auth/login", json={"email": "ada@example.org", "password": "nope"}
        )
        assert_error(wrong, 401, "INVALID_CREDENTIALS")
        assert "set-cookie" not in wrong.headers
        # A cross-site form cannot post JSON: a form body is refused, no cookie.
        form = await browser.post(
            "/api/auth/login", data={"email": "ada@example.org", "password": PASSWORD}
        )
        assert form.status_code == 422 and "set-cookie" not in form.headers

        login = await browser.post(
            "/api/auth/login", json={"email": "Ada@Example.org", "password": PASSWORD}
        )
        assert login.status_code == 200, login.text
        data = login.json()["data"]
        assert data["user"]["email"] == "ada@example.org" and data["role"] == "member"
        assert data["org"]["slug"] == "default" and data["expires_at"]
        csrf = data["csrf_token"]
        assert browser.cookies[f"valuerank_csrf_{port}"] == csrf
        assert PASSWORD not in login.text
        raw = _raw_cookie(login, "valuerank_session")
        assert "HttpOnly" in raw and "samesite=strict" in raw.lower()

        me = (await browser.get("/api/auth/me")).json()["data"]
        assert me["via"] == "session" and me["csrf_token"] == csrf and me["token_id"] is None

        # Unsafe methods need the CSRF token in the header.
        no_header = await browser.post("/api/tokens", json={"name": "x"})
        assert_error(no_header, 403, "CSRF_FAILED")
        wrong_header = await browser.post(
            "/api/tokens", json={"name": "x"}, headers={"X-CSRF-Token": _other(csrf)}
        )
        assert_error(wrong_header, 403, "CSRF_FAILED")
        made = await browser.post(
            "/api/tokens", json={"name": "from the ui"}, headers={"X-CSRF-Token": csrf}
        )
        assert made.status_code == 201 and made.json()["data"]["token"].startswith("vrt_")
        # Bearer requests need no CSRF token (a cross-site page cannot set that header).
        async with live.client(token=made.json()["data"]["token"]) as script:
            assert (await script.post("/api/tokens", json={})).status_code == 201

        assert_error(await browser.post("/api/auth/logout"), 403, "CSRF_FAILED")
        out = await browser.post("/api/auth/logout", headers={"X-CSRF-Token": csrf})
        assert out.json()["data"] == {"signed_out": True}
        assert browser.cookies.get(f"valuerank_session_{port}") is None  # deleted
    # The old cookie is worthless: the session row is revoked.
    old = {f"valuerank_session_{port}": login.cookies[f"valuerank_session_{port}"]}
    async with live.client(token=None, cookies=old) as replay:
        error = assert_error(await replay.get("/api/auth/me"), 401, "UNAUTHORIZED")
        assert "signed out" in error["error"]


async def test_switching_organisation(live: Live, assert_error: Any) -> None:
    async with live.db.transaction() as conn:
        await add_member(conn, live.org_id, "ada@example.org", "viewer", password=PASSWORD)
    other = await live.account("lab", Role.ADMIN)
    async with live.client(token=other.token) as lab_admin:
        added = await lab_admin.post(
            "/api/users", json={"email": "ada@example.org", "role": "member"}
        )
        assert added.status_code == 202  # Ada has an account: she is invited
    async with live.client(token=None) as browser:
        login = await browser.post(
            "/api/auth/login", json={"email": "ada@example.org", "password": PASSWORD}
        )
        csrf = login.json()["data"]["csrf_token"]
        headers = {"X-CSRF-Token": csrf}
        (invited,) = (await browser.get("/api/invitations")).json()["data"]["invitations"]
        accepted = await browser.post(
            f"/api/invitations/{invited['id']}", json={"decision": "accept"}, headers=headers
        )
        assert accepted.status_code == 200, accepted.text
        assert {
            o["slug"]: o["role"] for o in (await browser.get("/api/auth/me")).json()["data"]["orgs"]
        } == {
            "default": "viewer",
            "lab": "member",
        }
        moved = await browser.post("/api/auth/switch", json={"org": "lab"}, headers=headers)
        assert moved.status_code == 200, moved.text
        assert moved.json()["data"]["org"]["slug"] == "lab"
        assert moved.json()["data"]["role"] == "member"
        me = (await browser.get("/api/auth/me")).json()["data"]
        assert me["org"]["slug"] == "lab" and me["role"] == "member"
        nowhere = await browser.post("/api/auth/switch", json={"org": "default2"}, headers=headers)
        assert_error(nowhere, 404, "NOT_FOUND")
    async with live.client() as token_client:  # a token is bound to its organisation
        # a well-formed request its credential may not make: 403, not bad input
        assert_error(await token_client.post("/api/auth/switch", json={"org": "lab"}),
                     403, "SESSION_REQUIRED")  # fmt: skip


@sqlite_only
async def test_auto_login_only_for_requests_from_this_machine(
    live_server: Any, assert_error: Any
) -> None:
    async with live_server(auto_login=True) as local:
        port = local.url.rsplit(":", 1)[1]
        async with local.client(token=None) as browser:
            first = await browser.get("/api/auth/me")
            assert first.status_code == 200, first.text
            me = first.json()["data"]
            assert me["via"] == "local" and me["role"] == "admin"
            assert me["user"]["email"] == LOCAL_ADMIN_EMAIL
            csrf = browser.cookies[f"valuerank_csrf_{port}"]
            assert me["csrf_token"] == csrf
            assert (await browser.get("/")).status_code == 200  # the page, logged in
            # Writes need the CSRF cookie echoed: a cross-site page can do neither.
            assert_error(await browser.post("/api/tokens", json={}), 403, "CSRF_FAILED")
            made = await browser.post("/api/tokens", json={}, headers={"X-CSRF-Token": csrf})
            assert made.status_code == 201
            cross = await browser.post(
                "/api/tokens",
                json={},
                headers={"X-CSRF-Token": csrf, "Origin": "http://evil.example"},
            )
            assert_error(cross, 403, "CSRF_FAILED")
        # Relayed by a proxy (uvicorn trusts 127.0.0.1's X-Forwarded-For): not this machine.
        async with local.client(token=None, headers={"X-Forwarded-For": "203.0.113.9"}) as far:
            assert_error(await far.get("/api/auth/me"), 401, "UNAUTHORIZED")
        # DNS rebinding: a loopback connection for another site's name.
        async with local.client(token=None, headers={"Host": "evil.example"}) as rebound:
            assert_error(await rebound.get("/api/auth/me"), 401, "UNAUTHORIZED")
        # A wrong token is still refused, not taken for the local admin.
        async with local.client(token="vrt_" + "b" * 43) as wrong:
            assert_error(await wrong.get("/api/auth/me"), 401, "UNAUTHORIZED")


def test_what_counts_as_this_machine() -> None:
    def scope(client: str, host: str, *extra: tuple[bytes, bytes]) -> dict[str, Any]:
        headers = [(b"host", host.encode()), *extra]
        return {"type": "http", "client": (client, 5000), "headers": headers}

    for name in ("127.0.0.1", "127.5.6.7", "::1", "[::1]", "localhost", "::ffff:127.0.0.1"):
        assert is_loopback_host(name), name
    for name in ("0.0.0.0", "::", "192.0.2.2", "example.org", "", "localhost.evil.example"):
        assert not is_loopback_host(name), name
    assert is_local_request(scope("127.0.0.1", "127.0.0.1:8000"))
    assert is_local_request(scope("::1", "[::1]:8000"))
    assert is_local_request(scope("127.0.0.1", "localhost"))
    assert not is_local_request(scope("192.0.2.9", "127.0.0.1:8000"))
    assert not is_local_request(scope("127.0.0.1", "valuerank.example:8000"))
    assert not is_local_request(scope("127.0.0.1", "127.0.0.1", (b"forwarded", b"for=1.2.3.4")))
    assert not is_local_request(scope("127.0.0.1", "127.0.0.1", (b"x-real-ip", b"1.2.3.4")))
    assert same_origin(scope("127.0.0.1", "127.0.0.1:8000"))
    assert same_origin(scope("x", "127.0.0.1:8000", (b"origin", b"http://127.0.0.1:8000")))
    assert not same_origin(scope("x", "127.0.0.1:8000", (b"origin", b"http://evil.example")))


@pytest.mark.parametrize(
    ("client", "host", "local"),
    [
        # A dual-stack server sees IPv4 clients as IPv4-mapped IPv6 addresses.
        ("::ffff:192.0.2.9", "127.0.0.1:8000", False),
        ("::ffff:192.0.2.9", "[::1]:8000", False),
        ("::ffff:127.0.0.1", "127.0.0.1:8000", True),
        ("::ffff:7f00:1", "localhost:8000", True),  # the same address in hexadecimal
        ("::ffff:0:7f00:1", "127.0.0.1", False),  # IPv4-translated, not mapped: not loopback
        ("::1", "[::1]", True),
        ("::1", "::1", True),  # a bare IPv6 Host (no port) is read whole
        ("::1", "[::ffff:192.0.2.9]:8000", False),
        ("::1", "[::ffff:127.0.0.1]:8000", True),
        ("127.0.0.1", "localhost.:8000", False),
        ("127.0.0.1", "127.0.0.1.evil.example", False),
        ("127.0.0.1", "app.localhost:8000", True),
        ("127.0.0.1", "", False),  # no Host header
        ("192.0.2.9", "localhost", False),
        ("unknown", "localhost", False),
    ],
)
def test_ipv4_mapped_and_bracketed_addresses(client: str, host: str, local: bool) -> None:
    scope = {"type": "http", "client": (client, 5000), "headers": [(b"host", host.encode())]}
    assert is_local_request(scope) is local


def test_no_client_and_every_forwarding_header_are_not_this_machine() -> None:
    headers = [(b"host", b"127.0.0.1:8000")]
    assert not is_local_request({"type": "http", "client": None, "headers": headers})
    assert is_local_request({"type": "http", "client": ("127.0.0.1", 1), "headers": headers})
    for header in (b"forwarded", b"x-forwarded-for", b"x-forwarded-host", b"x-real-ip"):
        # Even one naming loopback: a proxy on this machine relays someone else.
        relayed = [*headers, (header, b"127.0.0.1")]
        scope = {"type": "http", "client": ("127.0.0.1", 1), "headers": relayed}
        assert not is_local_request(scope), header
    for name in ("::ffff:192.0.2.9", "[::ffff:192.0.2.9]", "::ffff:10.0.0.1", "::ffff:0.0.0.0"):
        assert not is_loopback_host(name), name
    assert is_loopback_host("[::ffff:127.0.0.1]") and is_loopback_host(" LOCALHOST ")


@sqlite_only
async def test_public_read_prefixes_open_reads_only(
    live: Live, live_server: Any, assert_error: Any, make_run: Any
) -> None:
    run = await make_run(live.org_id)
    async with live.client(token=None) as anonymous:  # off by default
        assert_error(await anonymous.get("/api/assumptions/models"), 401, "UNAUTHORIZED")
    async with live_server(public_read_prefixes=("/api/assumptions/", "/api/runs")) as opened:
        async with opened.client(token=None) as anonymous:
            listed = await anonymous.get("/api/runs")
            assert listed.status_code == 200
            assert [r["id"] for r in listed.json()["data"]["runs"]] == [run.id]
            assert (await anonymous.get(f"/api/runs/{run.id}")).status_code == 200
            # The validation API's reads, as the seed serves them, without credentials.
            models = await anonymous.get("/api/assumptions/models")
            assert models.status_code == 200 and models.json()["data"]["total_models"] > 0
            # Authenticated as an anonymous viewer: an unknown route is a 404, not a 401.
            assert_error(await anonymous.get("/api/assumptions/nothing"), 404, "NOT_FOUND")
            # Only reads, only under the prefixes.
            assert_error(await anonymous.post("/api/runs", json={}), 401, "UNAUTHORIZED")
            assert_error(await anonymous.get("/api/auth/me"), 401, "UNAUTHORIZED")
            assert_error(await anonymous.get("/api/runsX"), 401, "UNAUTHORIZED")
        async with opened.client(token="vrt_" + "c" * 43) as wrong:  # a bad token stays bad
            assert_error(await wrong.get("/api/runs"), 401, "UNAUTHORIZED")


@sqlite_only
async def test_websockets_are_authenticated(
    db: Any, org_id: str, live: Live, serve_app: Any
) -> None:
    """A WebSocket route on the real app: refused (1008) without credentials or from another
    origin with a cookie; a Bearer token, a session cookie, or a public-read prefix open it."""
    app = create_app(db, org_id=org_id, settings=api_settings(public_read_prefixes=("/ws/open",)))

    async def who(ws: WebSocket, ctx: Viewer) -> None:
        await ws.accept()
        await ws.send_json({"via": ctx.principal.via, "role": ctx.principal.role.value})
        await ws.close()

    async def members_only(ws: WebSocket, ctx: Member) -> None:
        await ws.accept()
        await ws.send_json({"via": ctx.principal.via, "role": ctx.principal.role.value})
        await ws.close()

    app.add_api_websocket_route("/ws/who", who)
    app.add_api_websocket_route("/ws/open/who", who)
    app.add_api_websocket_route("/ws/member", members_only)
    viewer = await live.account("default", Role.VIEWER)

    async def ask(url: str, **headers: str) -> Any:
        async with connect(url, additional_headers=headers) as ws:
            return __import__("json").loads(await ws.recv())

    async with serve_app(app) as base:
        ws_base = base.replace("http://", "ws://")
        with pytest.raises(InvalidStatus) as refused:
            await ask(f"{ws_base}/ws/who")
        assert refused.value.response.status_code == 403  # closed (1008) before the handshake
        assert await ask(f"{ws_base}/ws/who", Authorization=f"Bearer {TOKEN}") == {
            "via": "token",
            "role": "admin",
        }
        assert (await ask(f"{ws_base}/ws/open/who"))["via"] == "anonymous"
        # A weaker role than the route needs: closed (1008), like no credentials.
        recorder = BufferingHandler(capacity=1000)  # keeps what it is given
        recorder.setLevel(logging.ERROR)
        crashes = recorder.buffer
        logging.getLogger("uvicorn.error").addHandler(recorder)
        try:
            with pytest.raises(InvalidStatus) as weaker:
                await ask(f"{ws_base}/ws/member", Authorization=f"Bearer {viewer.token}")
        finally:
            logging.getLogger("uvicorn.error").removeHandler(recorder)
        assert weaker.value.response.status_code == 403
        assert crashes == []  # a close, not an exception in the application
        assert (await ask(f"{ws_base}/ws/member", Authorization=f"Bearer {TOKEN}"))["role"] == (
            "admin"
        )
        port = base.rsplit(":", 1)[1]
        import httpx

        async with httpx.AsyncClient(base_url=base) as browser:
            await browser.get("/", params={"token": TOKEN})
            cookie = f"valuerank_session_{port}={browser.cookies[f'valuerank_session_{port}']}"
        same = await ask(f"{ws_base}/ws/who", Cookie=cookie, Origin=base)
        assert same["via"] == "session"
        with pytest.raises(InvalidStatus):
            await ask(f"{ws_base}/ws/who", Cookie=cookie, Origin="http://evil.example")
    assert websockets  # the client library used here


def test_the_access_log_never_shows_the_token() -> None:
    assert redact("/?token=abc") == "/?token=[redacted]"
    assert redact("/runs/1?x=1&token=abc&y=2") == "/runs/1?x=1&token=[redacted]&y=2"
    assert redact("/runs/1?mytoken=abc") == "/runs/1?mytoken=abc"
    assert redact(f"/api/x?cursor={TOKEN}&y=1") == "/api/x?cursor=vrt_[redacted]&y=1"
    # uvicorn's access record: '%s - "%s %s HTTP/%s" %d' with the full path as an argument.
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        1,
        '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5000", "GET", f"/?token={TOKEN}", "1.1", 303),
        None,
    )
    assert RedactTokenFilter().filter(record) is True
    assert TOKEN not in record.getMessage() and "token=[redacted]" in record.getMessage()


def test_access_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VALUERANK_PUBLIC_READ_PREFIXES", "/api/assumptions/, /ws/updates,")
    monkeypatch.setenv("VALUERANK_AUTO_LOGIN", "true")
    monkeypatch.setenv("VALUERANK_RATE_LIMIT_MODELS", "10 per second")
    settings = Settings()
    assert settings.public_read_prefixes == ("/api/assumptions/", "/ws/updates")
    assert settings.auto_login is True and settings.rate_limit_models == "10 per second"
    for bad in ("api/assumptions", "/"):
        with pytest.raises(ValidationError, match="below the root"):
            Settings.model_validate({"public_read_prefixes": bad})  # as the environment says
    with pytest.raises(ValidationError, match="not a rate"):
        Settings(rate_limit_standard="often")
    monkeypatch.delenv("VALUERANK_PUBLIC_READ_PREFIXES")
    assert Settings().public_read_prefixes == ()
