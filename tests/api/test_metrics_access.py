"""/metrics counts every organisation's jobs and outbox (issue 21): only an admin of the
install's default organisation, or the scraper holding VALUERANK_METRICS_TOKEN, reads it."""

from __future__ import annotations

from typing import Any

import pytest

from valuerank.accounts import Role
from valuerank.api import create_app
from valuerank.errors import InvalidInputError

from .conftest import Live, LiveServer, api_settings

SCRAPER = "metrics-secret-0123456789abcdef"


async def test_only_install_admins_read_metrics_without_a_token(
    live: Live, assert_error: Any
) -> None:
    async with live.client() as install_admin:
        answer = await install_admin.get("/metrics")
        assert answer.status_code == 200 and "valuerank_" in answer.text
    for org, role in (("default", Role.VIEWER), ("default", Role.MEMBER), ("lab", Role.ADMIN)):
        async with live.client_for(org, role) as other:
            error = assert_error(await other.get("/metrics"), 403, "FORBIDDEN")
            assert "metrics token" in error["error"], (org, role)
    async with live.client(token=None) as nobody:
        assert_error(await nobody.get("/metrics"), 401, "UNAUTHORIZED")
    async with live.client(token=SCRAPER) as guess:  # no metrics token is set
        assert_error(await guess.get("/metrics"), 401, "UNAUTHORIZED")


async def test_the_metrics_token_reads_metrics_and_nothing_else(
    live: Live, live_server: LiveServer, assert_error: Any
) -> None:
    async with live_server(metrics_token=SCRAPER) as server:
        assert SCRAPER not in repr(server.context.access_policy)
        async with server.client(token=SCRAPER) as scraper:
            answer = await scraper.get("/metrics")
            assert answer.status_code == 200 and "valuerank_" in answer.text
            assert SCRAPER not in answer.text
            for path in ("/api/runs", "/api/auth/me", "/api/system/queue/jobs"):
                assert_error(await scraper.get(path), 401, "UNAUTHORIZED")
        async with server.client(token=SCRAPER[:-1] + "x") as wrong:
            assert_error(await wrong.get("/metrics"), 401, "UNAUTHORIZED")
        async with server.client() as install_admin:  # admins keep reading it
            assert (await install_admin.get("/metrics")).status_code == 200
        async with server.client_for("lab", Role.ADMIN) as other_admin:
            assert_error(await other_admin.get("/metrics"), 403, "FORBIDDEN")


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_short_metrics_token_is_refused_without_echoing_it(db: Any, org_id: str) -> None:
    with pytest.raises(InvalidInputError) as refused:
        create_app(db, org_id=org_id, settings=api_settings(metrics_token="short-secret"))
    assert "16 characters" in str(refused.value) and "short-secret" not in str(refused.value)
