"""Issue 22 defect 5: the demo (embedded SQLite, no VALUERANK_SECRET_KEY) stores provider keys
through the API, in a key file beside the database; a PostgreSQL server still needs the key."""

from __future__ import annotations

import stat
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.servers import running

from valuerank.api.app import create_app
from valuerank.config import get_settings
from valuerank.credentials import resolve_api_key
from valuerank.db import Database, create_database

from .conftest import Live, api_settings, provision_admin

KEY = "sk-proj-demo-key-0123456789-wxyz"
NO_ENV: dict[str, str] = {}


@pytest.fixture(autouse=True)
def _no_secret_key(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("VALUERANK_SECRET_KEY", raising=False)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


async def _store(live: Live) -> httpx.Response:
    async with live.client() as admin:
        return await admin.put("/api/credentials/openai", json={"api_key": KEY})


@pytest.fixture
async def demo_live(db: Database, org_id: str) -> AsyncIterator[Live]:
    """The server as `valuerank demo` starts it: the embedded database, auto-login."""
    await provision_admin(db, org_id)
    app = create_app(db, org_id=org_id, settings=api_settings(auto_login=True))
    async with running(app) as url:
        yield Live(url, app)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_the_embedded_default_stores_a_key_in_a_key_file_and_reads_it_after_a_restart(
    database_url: Any, demo_live: Live, org_id: str
) -> None:
    key_file = Path(database_url.url.removeprefix("sqlite:///") + ".secret-key")
    assert not key_file.exists()
    stored = await _store(demo_live)
    assert stored.status_code == 200, stored.text
    assert stored.json()["data"]["hint"].endswith("wxyz")
    assert key_file.exists() and stat.S_IMODE(key_file.stat().st_mode) == 0o600
    written = key_file.read_text()
    assert written.strip() not in stored.text  # never in a response

    # A restart: a new engine on the same file reads the same key file and decrypts.
    restarted = create_database(database_url.url)
    try:
        async with restarted.transaction() as conn:
            assert await resolve_api_key(conn, org_id, "openai", environ=NO_ENV) == KEY
    finally:
        await restarted.dispose()
    assert key_file.read_text() == written

    async with demo_live.client() as viewer:
        listed = (await viewer.get("/api/credentials")).json()["data"]
    assert KEY not in str(listed)


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_a_postgresql_server_without_a_key_still_refuses(
    demo_live: Live, assert_error: Any, tmp_path: Path
) -> None:
    assert_error(await _store(demo_live), 503, "SECRET_KEY_MISSING")
