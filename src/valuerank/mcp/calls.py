"""A tool call as a JSON API request, and the API's answer as the tool's result (pure).

The answer's envelope is unwrapped: a success's `data` is the structured output (a list is
given as `{"items": [...]}`: MCP's structured output is an object); a failure becomes a
`ToolFailure` with the API's code, message and hint, so an assistant sees the same
`RUN_NOT_FOUND` or `FORBIDDEN` (and the same fix) as a script would.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from valuerank.errors import ValueRankError
from valuerank.mcp.spec import ToolSpec


class ToolFailure(ValueRankError):
    """A tool's error as the API (or the tool) coded it."""

    def __init__(self, code: str, message: str, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.code = code


@dataclass(frozen=True)
class ApiRequest:
    method: str
    path: str
    params: list[tuple[str, str]] = field(default_factory=list)
    body: dict[str, Any] | None = None


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def to_request(
    spec: ToolSpec, arguments: Mapping[str, Any], *, extra: tuple[str, ...] = ()
) -> ApiRequest:
    """The API request a call of `spec` with `arguments` sends. `extra`: arguments the
    server handles itself (not sent). A missing id is INVALID_INPUT, never a request."""
    if spec.unsupported is not None:
        raise ToolFailure(
            spec.unsupported.code, spec.unsupported.message, hint=spec.unsupported.hint
        )
    path = spec.route
    for name in spec.path_params:
        value = arguments.get(name)
        if not isinstance(value, str) or not value:
            raise ToolFailure("INVALID_INPUT", f"{spec.name} needs `{name}`")
        path = path.replace(f"{{{name}:path}}", quote(value, safe=":/"))
        path = path.replace(f"{{{name}}}", quote(value, safe=""))
    rest = {
        spec.renames.get(name, name): value
        for name, value in arguments.items()
        if name not in spec.path_params and name not in extra and value is not None
    }
    if spec.sends_body:
        return ApiRequest(spec.method, path, body={**rest, **spec.fixed_body})
    params: list[tuple[str, str]] = []
    for name, value in rest.items():
        values = value if isinstance(value, list) else [value]
        params += [(name, _query_value(item)) for item in values]
    return ApiRequest(spec.method, path, params=params)


def failure_of(status: int, body: Any) -> ToolFailure:
    """The API's error answer as a tool failure (its own code, message and hint)."""
    if isinstance(body, dict) and isinstance(body.get("code"), str):
        hint = body.get("hint") if isinstance(body.get("hint"), str) else None
        return ToolFailure(body["code"], str(body.get("error", "")), hint=hint)
    return ToolFailure(f"HTTP_{status}", f"the API answered HTTP {status}")


def structured(spec: ToolSpec, status: int, body: Any) -> dict[str, Any]:
    """A success's structured output; a failure (or anything but an envelope) raises."""
    if not 200 <= status < 300 or not isinstance(body, dict) or body.get("success") is not True:
        raise failure_of(status, body)
    data = body.get("data")
    if spec.pick is not None and isinstance(data, dict):
        return {name: data[name] for name in spec.pick if name in data}
    return data if isinstance(data, dict) else {"items": data}


def as_text(value: Any) -> str:
    """The text content beside the structured output (clients without structured output
    read this): the same JSON."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def failure_text(failure: ValueRankError) -> str:
    """`CODE: message` and the hint on its own line: what an assistant acts on."""
    text = f"{failure.code}: {failure.message}"
    return f"{text}\nhint: {failure.hint}" if failure.hint else text
