"""The MCP server driven by the SDK's own client: over streamable HTTP against a real
uvicorn server (`valuerank serve`'s app) on loopback, and over stdio against a spawned
`python -m valuerank mcp`; a real worker runs the runs (scripted models, no network)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult
from tests.api.conftest import TOKEN, Live, api_settings, provision_admin
from tests.servers import running
from tests.waiting import WAIT_SECONDS
from typer.testing import CliRunner

import valuerank
from valuerank.api import create_app
from valuerank.cli import app as cli_app
from valuerank.cli.live import in_process_worker
from valuerank.config import get_settings
from valuerank.db import Database
from valuerank.pipeline.calls import ProviderPool
from valuerank.queue import QueueSettings

DEMO = Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md"
FAST = QueueSettings(poll_seconds=0.02, heartbeat_seconds=0.05, retry_base_seconds=0.0)
MODELS = ["scripted:utilitarian", "scripted:contrarian"]
ENDED = ("completed", "failed", "cancelled")


def ok(result: CallToolResult) -> dict[str, Any]:
    """A tool's structured output; fails with the tool's error text otherwise."""
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    # The text content is the same JSON, for clients that read only text.
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
    return result.structured_content


def error_code(result: CallToolResult) -> str:
    """A tool error's code (its structured content is the API's `{code, error, hint}`)."""
    assert result.is_error, result.structured_content
    content = result.structured_content
    assert isinstance(content, dict)
    assert result.content[0].text.startswith(f"{content['code']}: ")  # type: ignore[union-attr]
    return str(content["code"])


@asynccontextmanager
async def http_session(url: str, token: str | None = TOKEN) -> AsyncIterator[ClientSession]:
    """The SDK's client over streamable HTTP at `url`/mcp, with `token` as its Bearer."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=WAIT_SECONDS) as client,
        streamable_http_client(f"{url}/mcp", http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def stdio_session(env: dict[str, str], *args: str) -> AsyncIterator[ClientSession]:
    """The SDK's client over stdio to a spawned `python -m valuerank mcp ARGS…`."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "valuerank", "mcp", *args], env=env
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def start_demo_run(session: ClientSession) -> tuple[str, dict[str, Any]]:
    """The demo definition stored and a 30 % run of two scripted models started, through the
    tools; its id and start_run's answer."""
    stored = ok(await session.call_tool("create_definition", {"markdown": DEMO.read_text()}))
    started = ok(
        await session.call_tool(
            "start_run",
            {
                "definition_id": stored["id"],
                "models": MODELS,
                "sample_percentage": 30,
                "sample_seed": 7,
                "followup_turns": 0,
            },
        )
    )
    return str(started["id"]), started


async def wait_ended(session: ClientSession, run_id: str) -> dict[str, Any]:
    """get_run_status until the run has ended."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_SECONDS
    while True:
        status = ok(await session.call_tool("get_run_status", {"run_id": run_id}))
        if status["status"] in ENDED or loop.time() > deadline:
            return status
        await asyncio.sleep(0.1)


@pytest.fixture
async def mcp_live(db: Database, org_id: str) -> AsyncIterator[Live]:
    """The API's app served on loopback (its `/mcp` too); `TOKEN` is the default
    organisation's admin."""
    await provision_admin(db, org_id)
    app = create_app(db, org_id=org_id, settings=api_settings())
    async with running(app) as url:
        yield Live(url, app)


def working(live: Live) -> AbstractAsyncContextManager[Any]:
    """A worker running the pipeline in this process on the app's database (start it after
    the test's own writes: on SQLite they would wait for its lock)."""
    return in_process_worker(
        live.db, settings=FAST, concurrency=2, providers=ProviderPool(environ={})
    )


Invoke = Callable[..., Any]


@pytest.fixture
def cli(database_url: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Invoke]:
    """`valuerank ARGS… --json` on this test's database: its decoded output."""
    monkeypatch.setenv("VALUERANK_DATABASE_URL", database_url.url)
    runner = CliRunner()

    def invoke(*args: str) -> Any:
        get_settings.cache_clear()
        result = runner.invoke(cli_app, [*args, "--json"], catch_exceptions=False)
        assert result.exit_code == 0, result.stdout + result.stderr
        return json.loads(result.stdout)

    yield invoke
    get_settings.cache_clear()


def same_numbers(summary: dict[str, Any], analysis: dict[str, Any]) -> None:
    """get_run_summary's figures are `valuerank analyze --json`'s, for the same inputs (the
    meta's `inputHash`); only whether it came from the cache may differ (and when it was
    computed: the worker may store its own analysis of the ended run meanwhile)."""
    for key in ("perModel", "modelAgreement", "mostContestedScenarios", "scaleLabels"):
        assert summary[key] == analysis[key], key
    drop = {"cached"}
    assert {k: v for k, v in summary["meta"].items() if k not in drop} == {
        k: v for k, v in analysis["meta"].items() if k not in drop
    }
