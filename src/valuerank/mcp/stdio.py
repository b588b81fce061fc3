"""`valuerank mcp`: the server over stdio, for an assistant on this machine.

- With VALUERANK_API_URL and VALUERANK_API_TOKEN: every tool asks that server's JSON API
  with the token (`remote_gateway`): what the token's user may do, in its organisation.
- Otherwise, on the configured database (the embedded SQLite file by default): the JSON API's
  app made in this process and called in process (`local_gateway`), as the local admin of the
  default organisation. The app authenticates API tokens only, so a token of the local admin
  is made for the process (named `valuerank mcp (stdio)`, lasting a day at most) and revoked
  when the server stops.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from mcp.server.stdio import stdio_server

from valuerank.accounts import create_token, ensure_local_admin, revoke_token
from valuerank.api import create_app
from valuerank.config import Settings
from valuerank.db import Database
from valuerank.mcp.gateway import TIMEOUT_SECONDS, Gateway
from valuerank.mcp.http import IN_PROCESS_BASE
from valuerank.mcp.server import build_server

LOCAL_TOKEN_NAME = "valuerank mcp (stdio)"
LOCAL_TOKEN_DAYS = 1.0


@asynccontextmanager
async def local_gateway(db: Database, org_id: str, settings: Settings) -> AsyncIterator[Gateway]:
    """The API of `db` in process, as the local admin of `org_id` (see the module)."""
    app = create_app(db, org_id=org_id, settings=settings)
    async with db.transaction(immediate=True) as conn:
        admin_id = await ensure_local_admin(conn, org_id)
        made = await create_token(
            conn, org_id, admin_id, name=LOCAL_TOKEN_NAME, expires_in_days=LOCAL_TOKEN_DAYS
        )

    async def openapi() -> dict[str, Any]:
        return app.openapi()

    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(
            transport=transport, base_url=IN_PROCESS_BASE, timeout=TIMEOUT_SECONDS
        ) as client:
            yield Gateway(client, made.token, openapi_source=openapi)
    finally:
        async with db.transaction(immediate=True) as conn:
            await revoke_token(conn, org_id, made.info.id)


@asynccontextmanager
async def remote_gateway(url: str, token: str) -> AsyncIterator[Gateway]:
    """A ValueRank server's API, as the token's user."""
    async with httpx.AsyncClient(base_url=url.rstrip("/"), timeout=TIMEOUT_SECONDS) as client:
        yield Gateway(client, token)


async def serve_stdio(gateway: Gateway) -> None:
    """Serve MCP on stdin/stdout until the client closes them."""
    server = build_server(lambda _ctx: gateway)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
