"""`valuerank mcp` over stdio, spawned as an assistant spawns it, driven by the SDK's client:
on the configured database as the local admin (a worker in the process), and, with
VALUERANK_API_URL and VALUERANK_API_TOKEN, against a server as that token's user."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from tests.api.conftest import TOKEN, Live

from valuerank.accounts import Role, list_tokens
from valuerank.mcp.stdio import LOCAL_TOKEN_NAME

from .conftest import (
    Invoke,
    error_code,
    ok,
    same_numbers,
    start_demo_run,
    stdio_session,
    wait_ended,
    working,
)


def _env(**values: str) -> dict[str, str]:
    """The spawned server's environment: only what the test gives (and what Python needs)."""
    keep = {k: os.environ[k] for k in ("PATH", "HOME", "TMPDIR") if k in os.environ}
    return {**keep, "VALUERANK_WORKER_POLL_SECONDS": "0.05", **values}


async def test_a_local_run_as_the_local_admin(database_url: Any, db: Any, cli: Invoke) -> None:
    env = _env(VALUERANK_DATABASE_URL=database_url.url)
    # PostgreSQL runs no worker in the server's process unless asked (as `valuerank serve`).
    async with stdio_session(env, "--work") as session:
        tools = (await session.list_tools()).tools
        assert len(tools) == 30
        run_id, started = await start_demo_run(session)
        assert started["estimate"]["calls"] == started["jobs"]
        assert (await wait_ended(session, run_id))["status"] == "completed"
        summary = ok(await session.call_tool("get_run_summary", {"run_id": run_id}))
        # The admin tools are the local admin's.
        limits = {"provider": "scripted", "rpm": 600}
        assert ok(await session.call_tool("set_provider_limits", limits))["rpm"] == 600
        missing = await session.call_tool("get_run_summary", {"run_id": "ffffffff"})
        assert error_code(missing) == "NOT_FOUND"
        read = await session.read_resource(f"valuerank://runs/{run_id}/analysis")
        assert '"perModel"' in read.contents[0].text  # type: ignore[union-attr]
    same_numbers(summary, (await asyncio.to_thread(cli, "analyze", run_id))["analysis"])
    # The process's token of the local admin was revoked when it stopped.
    async with db.transaction() as conn:
        from valuerank.orgs import ensure_org

        org_id = await ensure_org(conn, "default")
        tokens = [t for t in await list_tokens(conn, org_id) if t.name == LOCAL_TOKEN_NAME]
    assert tokens and all(t.revoked_at is not None for t in tokens)


async def test_against_a_server_as_the_tokens_user(mcp_live: Live) -> None:
    member = await mcp_live.account("other", Role.MEMBER)
    remote = _env(VALUERANK_API_URL=mcp_live.url, VALUERANK_API_TOKEN=TOKEN)
    async with working(mcp_live), stdio_session(remote) as session:
        run_id, _ = await start_demo_run(session)
        assert (await wait_ended(session, run_id))["status"] == "completed"
        assert ok(await session.call_tool("get_run_summary", {"run_id": run_id}))["perModel"]
    # Another organisation's member sees none of it and may not administer.
    elsewhere = _env(VALUERANK_API_URL=mcp_live.url, VALUERANK_API_TOKEN=member.token)
    async with stdio_session(elsewhere) as session:
        result = await session.call_tool("get_run_status", {"run_id": run_id})
        assert error_code(result) == "NOT_FOUND"
        assert error_code(await session.call_tool("trigger_recovery", {})) == "FORBIDDEN"


def test_a_server_without_a_token_is_refused(monkeypatch: Any) -> None:
    """With VALUERANK_API_URL but no token, `valuerank mcp` says what is missing (on stderr:
    stdout is the protocol's) instead of acting anonymously."""
    from typer.testing import CliRunner

    from valuerank.cli import app
    from valuerank.config import get_settings

    monkeypatch.setenv("VALUERANK_API_URL", "http://127.0.0.1:9")
    monkeypatch.delenv("VALUERANK_API_TOKEN", raising=False)
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(app, ["mcp"], catch_exceptions=False)
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 1 and result.stdout == ""
    assert "MISSING_API_TOKEN" in result.stderr or "VALUERANK_API_TOKEN" in result.stderr
