"""A server whose every database connection is busy answers 503 SERVER_BUSY with
Retry-After (not a 500), and serves again once a connection is free. Through the real server
on PostgreSQL (the pool's size is PostgreSQL's; SQLite's file has one writer anyway)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
from tests.conftest import TestDatabase
from tests.servers import running

from valuerank.api.app import create_app
from valuerank.db import Database, create_database

from .conftest import TOKEN, api_settings, provision_admin


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_every_connection_busy_answers_503_then_the_server_recovers(
    db: Database,
    org_id: str,
    database_url: TestDatabase,
    assert_error: Callable[[httpx.Response, int, str], dict[str, Any]],
) -> None:
    await provision_admin(db, org_id)
    one = create_database(database_url.url, pool_size=1, pool_overflow=0, pool_timeout=0.3)
    try:
        app = create_app(one, org_id=org_id, settings=api_settings())
        async with (
            running(app) as url,
            httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}) as c,
        ):
            assert (await c.get("/api/runs")).status_code == 200
            async with one.engine.connect():  # the pool's one connection, held elsewhere
                busy = await c.get("/api/runs")
            body = assert_error(busy, 503, "SERVER_BUSY")
            assert busy.headers["Retry-After"] == "1"
            assert "VALUERANK_DB_POOL_SIZE" in body["hint"]
            assert (await c.get("/api/runs")).status_code == 200
    finally:
        await one.dispose()
