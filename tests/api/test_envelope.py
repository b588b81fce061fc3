"""The envelope and the status of every kind of failure, on a real server."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

import httpx
import pytest

from valuerank.api import create_app
from valuerank.api.envelope import code_for_status
from valuerank.api.headers import CONTENT_SECURITY_POLICY
from valuerank.api.limits import MAX_BODY_BYTES
from valuerank.db import create_database

from .conftest import TOKEN, api_settings, provision_admin

sqlite_only = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


@sqlite_only
async def test_envelopes_and_statuses(live: Any, assert_error: Any) -> None:
    async with live.client() as client:
        response = await client.get("/api/runs")
        body = response.json()
        assert response.status_code == 200
        assert set(body) == {"success", "data", "timestamp", "cached"}
        assert body["success"] is True and body["cached"] is False
        assert body["data"] == {"runs": [], "count": 0, "next_cursor": None}
        assert datetime.fromisoformat(body["timestamp"]).tzinfo is not None
        # Security headers on every answer.
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        # Nothing of an organisation's is kept by a browser or a proxy: JSON and pages alike.
        assert response.headers["cache-control"] == "no-store"
        page = await client.get("/")
        assert page.status_code == 200 and page.headers["cache-control"] == "no-store"
        asset = await client.get("/static/app.css")
        assert asset.status_code == 200
        assert "no-store" not in asset.headers.get("cache-control", "")

        missing = assert_error(await client.get("/api/nothing/here"), 404, "NOT_FOUND")
        assert set(missing) == {"success", "error", "code", "timestamp"}
        assert_error(await client.get("/api/runs/no-such-run"), 404, "NOT_FOUND")
        assert_error(await client.get("/static/missing.css"), 404, "NOT_FOUND")
        assert_error(await client.delete("/api/runs"), 405, "METHOD_NOT_ALLOWED")

        invalid = assert_error(await client.get("/api/runs?limit=0"), 422, "VALIDATION_ERROR")
        assert invalid["details"][0]["loc"] == "query.limit"
        assert "input" not in invalid["details"][0]  # the input is never echoed
        assert_error(
            await client.get("/api/runs/x/events", params={"after": "-1"}), 422, "VALIDATION_ERROR"
        )
        assert_error(
            await client.get("/api/runs/x/events/stream", headers={"Last-Event-ID": "abc"}),
            422,
            "VALIDATION_ERROR",
        )

        # Too large by Content-Length: refused before a byte of it is read.
        big = await client.post("/api/runs", content=b"x" * (MAX_BODY_BYTES + 1))
        assert_error(big, 413, "PAYLOAD_TOO_LARGE")
        # Exactly at the limit passes the middleware (and this route has no POST).
        at_limit = await client.post("/api/runs", content=b"x" * MAX_BODY_BYTES)
        assert_error(at_limit, 405, "METHOD_NOT_ALLOWED")

    # Browsers asking for a missing page get it as HTML, still 404.
    async with live.client(headers={"Accept": "text/html"}) as browser:
        page = await browser.get("/runs/no-such-run")
        assert page.status_code == 404 and "NOT_FOUND" in page.text
        assert page.headers["content-type"].startswith("text/html")


@sqlite_only
async def test_streamed_bodies_are_cut_at_the_limit(
    db: Any, org_id: str, assert_error: Any, serve_app: Any
) -> None:
    """A body without Content-Length (chunked) is counted while a route reads it: the real app
    with a JSON-body route added (FastAPI would turn other errors in body parsing into 400)."""
    await provision_admin(db, org_id)
    app = create_app(db, org_id=org_id, settings=api_settings(), max_body_bytes=1000)

    @app.post("/api/echo")
    async def echo(body: dict[str, Any]) -> dict[str, int]:
        return {"keys": len(body)}

    async def chunks(n: int) -> Any:
        yield b'{"a": "'
        for _ in range(n):
            yield b"x" * 300
        yield b'"}'

    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    async with (
        serve_app(app) as url,
        httpx.AsyncClient(base_url=url, headers=headers, verify=False) as client,
    ):
        ok = await client.post("/api/echo", content=chunks(3))
        assert ok.status_code == 200 and ok.json() == {"keys": 1}
        assert "content-length" not in ok.request.headers
        assert_error(await client.post("/api/echo", content=chunks(4)), 413, "PAYLOAD_TOO_LARGE")


async def test_database_down_is_503(
    assert_error: Any, serve_app: Any, caplog: pytest.LogCaptureFixture
) -> None:
    down = create_database("postgresql://nobody@127.0.0.1:1/none")
    app = create_app(down, org_id="org", settings=api_settings())
    try:
        async with serve_app(app) as url, httpx.AsyncClient(base_url=url, verify=False) as client:
            body = assert_error(await client.get("/health"), 503, "DATABASE_UNAVAILABLE")
            assert "nobody" not in body["error"]  # no connection details leak
            # Authentication reads the token first: its failure is answered the same way,
            # with one warning line and no "Exception in ASGI application" traceback.
            server_log = logging.getLogger("uvicorn.error")  # it does not reach the root
            server_log.addHandler(caplog.handler)
            try:
                authed = await client.get("/api/runs", headers={"Authorization": f"Bearer {TOKEN}"})
            finally:
                server_log.removeHandler(caplog.handler)
            assert_error(authed, 503, "DATABASE_UNAVAILABLE")
            assert "Exception in ASGI application" not in caplog.text
    finally:
        await down.dispose()


def test_status_codes() -> None:
    assert code_for_status(401) == "UNAUTHORIZED"
    assert code_for_status(404) == "NOT_FOUND"
    assert code_for_status(409) == "CONFLICT"
    assert code_for_status(413) == "PAYLOAD_TOO_LARGE"
    assert code_for_status(422) == "UNPROCESSABLE_CONTENT" or code_for_status(422).startswith(
        "UNPROCESSABLE"
    )
    assert code_for_status(429) == "TOO_MANY_REQUESTS"
    assert code_for_status(503) == "SERVICE_UNAVAILABLE"
    assert code_for_status(599) == "HTTP_ERROR"
