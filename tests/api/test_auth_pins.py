"""What the authentication middleware answers, pinned exactly (issue 35 §8: a mutation study of
api/auth.py found these unchecked): a wrong Bearer token refused with 429 once the address is
past its limit, the sign-in redirect's `next`/`expired` and its no-store, the CSRF refusal's
code, message and hint, and the raw path of a `//host` request kept on this site."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from sqlalchemy import select

from valuerank.api.auth import CSRF_HINT
from valuerank.db.tables import sessions

from .conftest import TOKEN, Live

sqlite_only = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
HTML = {"Accept": "text/html"}


def _login_query(response: httpx.Response) -> dict[str, list[str]]:
    assert response.status_code == 303, response.text
    location = urlsplit(response.headers["location"])
    assert location.path == "/login"
    assert response.headers["cache-control"] == "no-store"
    return parse_qs(location.query)


@sqlite_only
async def test_a_wrong_bearer_token_is_refused_with_429_past_the_limit(
    live_server: Any, assert_error: Any
) -> None:
    async with live_server(rate_limits_enabled=True, rate_limit_standard="3/minute") as server:
        async with server.client(token="vrt_" + "c" * 43) as guesser:
            for _ in range(3):  # the address's failures, counted until the limit
                assert_error(await guesser.get("/api/runs"), 401, "UNAUTHORIZED")
            limited = await guesser.get("/api/runs")
            assert_error(limited, 429, "RATE_LIMITED")
            assert int(limited.headers["retry-after"]) > 0
        # What is limited is guessing: a request with no credential is still told to sign in.
        async with server.client(token=None) as anonymous:
            assert_error(await anonymous.get("/api/runs"), 401, "UNAUTHORIZED")


@sqlite_only
async def test_a_page_without_a_session_goes_to_sign_in_and_comes_back(live: Live) -> None:
    port = live.url.rsplit(":", 1)[1]
    async with live.client(token=None) as browser:
        query = _login_query(await browser.get("/runs/abc?tab=values&x=1", headers=HTML))
        assert query == {"next": ["/runs/abc?tab=values&x=1"]}
        assert _login_query(await browser.head("/runs/abc", headers=HTML)) == {
            "next": ["/runs/abc"]
        }
    # A session cookie the server no longer knows: the page says the session expired.
    gone = {f"valuerank_session_{port}": "a-session-that-ended"}
    async with live.client(token=None, cookies=gone) as returning:
        query = _login_query(await returning.get("/runs", headers=HTML))
        assert query == {"next": ["/runs"], "expired": ["1"]}
    # An API client (no text/html) gets the 401, not a redirect.
    async with live.client(token=None) as script:
        response = await script.get("/runs/abc")
        assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"


@sqlite_only
async def test_a_double_slash_path_is_sent_back_to_this_site(live: Live) -> None:
    # `//evil.example/x` as sent on the wire (raw_path): `next` must stay a path of this site.
    async with httpx.AsyncClient(base_url=live.url) as browser:
        request = browser.build_request("GET", live.url, headers=HTML)
        request.url = request.url.copy_with(raw_path=b"//evil.example/x?y=1")
        query = _login_query(await browser.send(request))
    assert query == {"next": ["/evil.example/x?y=1"]}


@sqlite_only
async def test_the_one_time_jump_keeps_the_rest_of_the_query(live: Live) -> None:
    async with live.client(token=None) as browser:
        jump = await browser.get(f"/runs?token={TOKEN}&status=running&page=2", headers=HTML)
        assert jump.status_code == 303
        assert jump.headers["location"] == "/runs?status=running&page=2"
        assert jump.headers["cache-control"] == "no-store"


@sqlite_only
async def test_a_csrf_refusal_says_what_to_send(live_server: Any, assert_error: Any) -> None:
    async with live_server(auto_login=True) as local, local.client(token=None) as browser:
        assert (await browser.get("/api/auth/me")).status_code == 200  # the cookies
        error = assert_error(await browser.post("/api/tokens", json={}), 403, "CSRF_FAILED")
    assert error["error"] == "missing or wrong X-CSRF-Token header"
    assert error["hint"] == CSRF_HINT


@sqlite_only
async def test_next_is_the_path_as_sent(live: Live) -> None:
    """The raw path, not the decoded one (`%2F` stays), and only leading slashes dropped."""
    async with live.client(token=None) as browser:
        encoded = _login_query(await browser.get("/runs/a%2Fb", headers=HTML))
        assert encoded == {"next": ["/runs/a%2Fb"]}
        assert _login_query(await browser.get("/XYZ/x", headers=HTML)) == {"next": ["/XYZ/x"]}


@sqlite_only
async def test_wrong_jump_tokens_count_as_failures(live_server: Any, assert_error: Any) -> None:
    limits = {"rate_limits_enabled": True, "rate_limit_standard": "2/minute"}
    async with live_server(**limits) as server, server.client(token=None) as guesser:
        for _ in range(2):
            wrong = await guesser.get("/runs?token=vrt_" + "d" * 43)
            assert_error(wrong, 401, "UNAUTHORIZED")
        limited = await guesser.get("/runs?token=vrt_" + "d" * 43)
        assert_error(limited, 429, "RATE_LIMITED")


@sqlite_only
async def test_a_jump_session_lasts_the_configured_time(live: Live, live_server: Any) -> None:
    async with live_server(session_ttl_hours=2) as server:  # TOKEN: made by `live`
        async with server.client(token=None) as browser:
            jump = await browser.get(f"/runs?token={TOKEN}", headers=HTML)
            assert jump.status_code == 303
        async with server.db.transaction() as conn:
            row = (
                await conn.execute(
                    select(sessions.c.created_at, sessions.c.expires_at)
                    .order_by(sessions.c.created_at.desc())
                    .limit(1)
                )
            ).one()
    lasts = (row.expires_at - row.created_at).total_seconds()
    assert abs(lasts - 2 * 3600) < 5
