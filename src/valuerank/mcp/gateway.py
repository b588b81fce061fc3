"""How the MCP server reaches the JSON API: one HTTP client, and the caller's Bearer token.

Three ways, one code path (`Gateway.send`):

- `valuerank serve`'s `/mcp`: the same app, in process (`httpx.ASGITransport`), with the
  token the MCP request came with: the API authenticates it, scopes every read to its
  organisation and checks its role, exactly as for a script;
- `valuerank mcp` on the embedded database: an app made for the process, in process, with a
  token of the local admin (`valuerank.mcp.stdio`);
- `valuerank mcp` with VALUERANK_API_URL and VALUERANK_API_TOKEN: the server over HTTP.

Only the Authorization header is sent: never a cookie, so a browser's session cannot act
through MCP.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from valuerank.mcp.calls import ApiRequest, ToolFailure

TIMEOUT_SECONDS = 60.0
OPENAPI_PATH = "/openapi.json"


@dataclass
class Gateway:
    """The JSON API as one caller sees it. `openapi`: how to get the API's document (the app
    in process hands its own; a remote one is asked once)."""

    client: httpx.AsyncClient
    token: str
    openapi_source: Callable[[], Awaitable[dict[str, Any]]] | None = None
    _openapi: dict[str, Any] | None = field(default=None, repr=False)

    async def send(self, request: ApiRequest) -> tuple[int, Any]:
        """The API's status and decoded JSON answer (None when it is not JSON)."""
        query: list[tuple[str, str | int | float | bool | None]] = list(request.params)
        try:
            response = await self.client.request(
                request.method,
                request.path,
                params=query or None,
                json=request.body,
                headers={"Authorization": f"Bearer {self.token}", "Accept": "application/json"},
            )
        except httpx.HTTPError as exc:
            raise ToolFailure(
                "API_UNREACHABLE",
                f"cannot reach the ValueRank API: {exc}",
                hint="check VALUERANK_API_URL and that the server is running",
            ) from exc
        try:
            body = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = None
        return response.status_code, body

    async def openapi(self) -> dict[str, Any]:
        """The API's OpenAPI document (the tools' schemas are read from it), fetched once."""
        if self._openapi is None:
            if self.openapi_source is not None:
                self._openapi = await self.openapi_source()
            else:
                status, body = await self.send(ApiRequest("GET", OPENAPI_PATH))
                if status != 200 or not isinstance(body, dict):
                    raise ToolFailure(
                        "API_UNREACHABLE",
                        f"the API's {OPENAPI_PATH} answered HTTP {status}",
                        hint="check VALUERANK_API_URL and VALUERANK_API_TOKEN",
                    )
                self._openapi = body
        return self._openapi
