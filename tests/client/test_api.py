"""`ApiClient` against the real API on loopback: the envelope's data, and every way a request
fails as an ApiError with a code and a hint (the server's, or ours when it cannot answer)."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from tests.api.conftest import TOKEN, Live, MakeRun

from valuerank.client import API_TOKEN_ENV, API_URL_ENV, ApiClient, ApiError
from valuerank.client.runs import run_status
from valuerank.config import Settings
from valuerank.refs import short_id


async def _status(client: ApiClient, ref: str) -> dict[str, object]:
    return await asyncio.to_thread(run_status, client, ref)


async def _refused(client: ApiClient, ref: str) -> ApiError:
    with pytest.raises(ApiError) as caught:
        await _status(client, ref)
    return caught.value


async def test_a_run_is_its_api_detail(live: Live, make_run: MakeRun) -> None:
    run = await make_run(live.org_id, name="seen from outside")
    data = await _status(ApiClient(live.url + "/", TOKEN), short_id(run.id))  # a short id, a slash
    async with live.client() as http:
        expected = (await http.get(f"/api/runs/{run.id}")).json()["data"]
    assert data == expected
    assert data["id"] == run.id and data["name"] == "seen from outside"


async def test_an_unknown_run_or_another_organisations_is_not_found(
    live: Live, make_run: MakeRun
) -> None:
    run = await make_run(live.org_id)
    unknown = await _refused(ApiClient(live.url, TOKEN), "no-such-run")
    assert unknown.code == "NOT_FOUND" and "no-such-run" in unknown.message
    assert unknown.hint and "runs list" in unknown.hint
    outsider = await live.account("another-org", "admin")
    theirs = await _refused(ApiClient(live.url, outsider.token), run.id)
    assert theirs.code == "NOT_FOUND"
    # A reference with `?` or `/` is quoted: not a query, not another route that exists.
    for odd in ("x?limit=1", "../runs"):
        refused = await _refused(ApiClient(live.url, TOKEN), odd)
        assert refused.code == "NOT_FOUND"


async def test_a_wrong_or_missing_token_says_which_setting_to_fix(
    live: Live, make_run: MakeRun
) -> None:
    run = await make_run(live.org_id)
    for token in ("vrt_not-a-real-token", None):
        refused = await _refused(ApiClient(live.url, token), run.id)
        assert refused.code == "UNAUTHORIZED"
        assert refused.hint and API_TOKEN_ENV in refused.hint
        assert "vrt_not-a-real-token" not in f"{refused.message} {refused.hint}"
    assert "vrt_" not in repr(ApiClient(live.url, "vrt_secret"))  # a secret, never shown


def test_no_server_at_the_address_is_api_unavailable() -> None:
    with socket.socket() as sock:  # a port nothing listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ApiError) as caught:
        run_status(ApiClient(f"http://127.0.0.1:{port}", TOKEN, timeout=5), "r")
    assert caught.value.code == "API_UNAVAILABLE"
    assert caught.value.hint and API_URL_ENV in caught.value.hint


@pytest.mark.parametrize("url", ["127.0.0.1:8000", "ftp://host/", "http://", "https:///x"])
def test_an_address_that_is_not_an_http_url_is_refused_before_any_request(url: str) -> None:
    with pytest.raises(ApiError) as caught:
        run_status(ApiClient(url, TOKEN), "r")
    assert caught.value.code == "INVALID_API_URL"
    assert url in caught.value.message


class _NotValueRank(BaseHTTPRequestHandler):
    """A web server that is not ValueRank: a page, an error page, JSON of another shape."""

    def do_GET(self) -> None:
        status, body = {
            "/page/api/runs/r": (200, b"<html>hello</html>"),
            "/error/api/runs/r": (502, b"Bad gateway"),
            "/other/api/runs/r": (200, b'{"id": "r"}'),
            "/failure/api/runs/r": (404, b'{"detail": "Not Found"}'),
        }[self.path]
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def not_valuerank() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NotValueRank)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("prefix", ["page", "error", "other", "failure"])
def test_a_server_that_is_not_valuerank_is_named_as_such(not_valuerank: str, prefix: str) -> None:
    with pytest.raises(ApiError) as caught:
        run_status(ApiClient(f"{not_valuerank}/{prefix}", TOKEN), "r")
    assert caught.value.code == "BAD_API_RESPONSE"
    assert "is it a ValueRank server?" in caught.value.message


def test_the_environment_names_are_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(API_URL_ENV, "http://server.test:8000")
    monkeypatch.setenv(API_TOKEN_ENV, "vrt_token")
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.api_url == "http://server.test:8000"
    assert settings.api_token is not None and settings.api_token.get_secret_value() == "vrt_token"
    client = ApiClient.from_env({API_URL_ENV: " http://server.test:8000 ", API_TOKEN_ENV: ""})
    assert client == ApiClient("http://server.test:8000", None)
    assert ApiClient.from_env({API_URL_ENV: "  "}) is None
    # The full CLI reads them through the settings (and `.env`) the same way: blank is unset.
    assert ApiClient.configured("  ", "vrt_token") is None
    assert ApiClient.configured(" http://s.test ", " ") == ApiClient("http://s.test", None)
