"""Secrets (API tokens, passwords, session cookies, provider keys) appear in the one answer
that creates them and nowhere else: not in later answers, not in errors, not in any log line
of a real `valuerank serve` (access log on); and a crash answers 500 without a trace."""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest
from cryptography.fernet import Fernet
from tests.servers import serving

from valuerank.api import create_app
from valuerank.config import get_settings
from valuerank.db import Database

from .conftest import TOKEN, api_settings, provision_admin

sqlite_only = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
PASSWORD = "never-log-this-passphrase-42"
PROVIDER_KEY = "sk-never-log-this-provider-key-0123456789"


class Capture(logging.Handler):
    """Every record the server side logs, at any level (the test's own httpx client aside)."""

    CLIENT_SIDE = ("httpx", "httpcore")

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if not record.name.startswith(self.CLIENT_SIDE):
            self.lines.append(logging.Formatter("%(name)s %(message)s").format(record))


async def _send_secrets(base: str, seen: list[httpx.Response]) -> tuple[str, str]:
    """Requests that carry every kind of secret, answers that might show one (kept in `seen`);
    returns the API token and the session cookie made meanwhile."""
    admin = httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"})
    browser = httpx.AsyncClient(base_url=base)
    async with admin, browser:
        added = await admin.post(
            "/api/users",
            json={"email": "ada@example.org", "role": "member", "password": PASSWORD},
        )
        assert added.status_code == 202 and PASSWORD not in added.text
        created = await admin.post("/api/tokens", json={"name": "ci"})
        token = created.json()["data"]["token"]  # the one answer that shows it
        assert (await admin.put("/api/credentials/openai", json={"api_key": PROVIDER_KEY})
                ).status_code == 200  # fmt: skip

        login = await browser.post(
            "/api/auth/login", json={"email": "ada@example.org", "password": PASSWORD}
        )
        assert login.status_code == 200
        session_secret = next(
            v for k, v in browser.cookies.items() if k.startswith("valuerank_session")
        )
        seen.append(login)
        seen.append(await browser.post(
            "/api/auth/login", json={"email": "ada@example.org", "password": PASSWORD + "x"}
        ))  # fmt: skip
        seen.append(await browser.post(
            "/api/auth/login", json={"email": "ada@example.org", "password": 12, "x": PASSWORD}
        ))  # fmt: skip
        seen.append(await browser.get("/api/auth/me"))
        async with httpx.AsyncClient(base_url=base) as jumper:
            seen.append(await jumper.get("/", params={"token": token}))
            seen.append(await jumper.get("/api/auth/me"))
        async with httpx.AsyncClient(
            base_url=base, headers={"Authorization": f"Bearer {token}"}
        ) as script:
            for path in ("/api/auth/me", "/api/tokens", "/api/users", "/api/credentials"):
                seen.append(await script.get(path))
        seen.append(await admin.get("/api/tokens"))
        seen.append(await admin.put("/api/credentials/openai", json={"api_key": 7}))
        seen.append(await admin.get(f"/api/tokens?cursor={token}"))
        seen.append(await browser.get("/", params={"token": token + "x"}))
    return token, session_secret


@sqlite_only
async def test_secrets_are_shown_once_and_never_logged(
    db: Database, org_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VALUERANK_SECRET_KEY", Fernet.generate_key().decode())
    get_settings.cache_clear()
    await provision_admin(db, org_id)
    capture = Capture()
    loggers = [logging.getLogger(n) for n in ("", "uvicorn", "uvicorn.access", "uvicorn.error")]
    seen: list[httpx.Response] = []
    root_level = logging.getLogger().level
    try:
        async with serving(db, org_id, settings=api_settings(), log_level="debug") as served:
            for logger in loggers:  # after uvicorn configured its logging
                logger.addHandler(capture)
            logging.getLogger().setLevel(logging.DEBUG)
            token, session_secret = await _send_secrets(served.base, seen)
    finally:
        for logger in loggers:
            logger.removeHandler(capture)
        logging.getLogger().setLevel(root_level)
        get_settings.cache_clear()

    assert len(seen) == 14
    for response in seen:
        text = response.text + str(response.headers.get("location", ""))
        for secret in (token, PASSWORD, PROVIDER_KEY):
            assert secret not in text, (response.request.url.path, secret[:6])
        if "set-cookie" not in response.headers:
            assert session_secret not in text
    assert capture.lines, "nothing was logged: the capture is not attached"
    assert any("/?token=[redacted]" in line for line in capture.lines)  # the access log
    for line in capture.lines:
        for secret in (token, PASSWORD, PROVIDER_KEY, session_secret, TOKEN):
            assert secret not in line, line


@sqlite_only
async def test_a_crash_answers_500_without_a_trace(
    db: Database, org_id: str, serve_app: Any, assert_error: Any
) -> None:
    await provision_admin(db, org_id)
    app = create_app(db, org_id=org_id, settings=api_settings())

    @app.get("/api/crash")
    async def crash() -> None:
        raise RuntimeError("boom: internal detail sk-internal-0123456789")

    async with (
        serve_app(app) as url,
        httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}) as client,
    ):
        response = await client.get("/api/crash")
        body = assert_error(response, 500, "INTERNAL_ERROR")
        assert body["error"] == "internal server error"
        for leak in ("Traceback", "RuntimeError", "boom", "sk-internal", "crash()"):
            assert leak not in response.text
        # The server is still up.
        assert (await client.get("/api/runs")).status_code == 200
