"""`/mcp` of `valuerank serve`: the streamable HTTP transport, inside the API's own app.

The request has passed the app's middleware (authentication, rate limits, body limit) like
any other: here only an API token is admitted (`Authorization: Bearer`): a session cookie,
the auto-login of the local admin or a public read is refused with 401, so a page in a
browser can never drive MCP. Each tool then calls the JSON API in process with that same
token (`valuerank.mcp.gateway`).

The transport is stateless and answers JSON (no session to keep between requests, no
server-sent stream): a request carries its own credentials, and any of several server
processes can answer it. The SDK's session manager runs in a task started on the first
request (`valuerank serve` runs the app without an ASGI lifespan) and ends with the app
(`AppContext.stopping`).
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from fastapi import FastAPI
from mcp.server import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.requests import HTTPConnection, Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from valuerank.api.auth import UNAUTHORIZED_HINT, bearer_token
from valuerank.api.context import AppContext
from valuerank.api.errors import error_response
from valuerank.mcp.calls import ToolFailure
from valuerank.mcp.gateway import TIMEOUT_SECONDS, Gateway
from valuerank.mcp.server import build_server

MCP_PATH = "/mcp"
IN_PROCESS_BASE = "http://127.0.0.1"  # the app called in process: no socket, no DNS


class McpEndpoint:
    """The ASGI endpoint of `/mcp` (see the module)."""

    def __init__(self, app: FastAPI, context: AppContext) -> None:
        self.app = app
        self.context = context
        self.client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),
            base_url=IN_PROCESS_BASE,
            timeout=TIMEOUT_SECONDS,
        )
        self.manager = StreamableHTTPSessionManager(
            app=build_server(self._gateway), stateless=True, json_response=True
        )
        self._running: asyncio.Future[None] | None = None

    async def _openapi(self) -> dict[str, Any]:
        return self.app.openapi()

    def _gateway(self, ctx: ServerRequestContext[Any, Any]) -> Gateway:
        request = ctx.request
        token = bearer_token(request) if isinstance(request, HTTPConnection) else None
        if token is None:  # __call__ admits no request without one; never trust that
            raise ToolFailure("UNAUTHORIZED", "an API token is required")
        return Gateway(self.client, token, openapi_source=self._openapi)

    async def _start(self) -> None:
        """The session manager's task group, running until the app stops."""
        if self._running is not None:
            await self._running
            return
        loop = asyncio.get_running_loop()
        self._running = loop.create_future()
        started = self._running

        async def run() -> None:
            async with self.manager.run():
                started.set_result(None)
                await self.context.stopping.wait()
            await self.client.aclose()

        self._task = loop.create_task(run())
        await started

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        principal = scope.get("state", {}).get("principal")
        if principal is None or principal.via != "token":
            response = error_response(
                Request(scope, receive),
                401,
                "UNAUTHORIZED",
                "/mcp takes an API token only (no session cookie, no auto-login)",
                hint=UNAUTHORIZED_HINT,
                headers={"WWW-Authenticate": "Bearer"},
            )
            await response(scope, receive, send)
            return
        await self._start()
        await self.manager.handle_request(scope, receive, send)


def install(app: FastAPI, context: AppContext) -> None:
    """Serve MCP at `/mcp` (left out of /openapi.json: it is not a JSON API route)."""
    endpoint = McpEndpoint(app, context)
    methods = ["GET", "POST", "DELETE"]
    app.router.routes.append(Route(MCP_PATH, endpoint, methods=methods, include_in_schema=False))
