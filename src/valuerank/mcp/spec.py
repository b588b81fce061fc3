"""What an MCP tool is here: a named, documented view of one JSON API route (pure data).

Each tool answers by sending one request to the JSON API as the caller (see
`valuerank.mcp.server`), so the organisation scoping, the roles, the rate limits, the error
codes and the answer shapes are the API's own, written once. A spec says which route, which
of the tool's arguments fill the path, and how the answer is cut down (`pick`), or that the
tool has no backing feature (`unsupported`: a coded tool error, never a pretence).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Method = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
PATH_PARAM = re.compile(r"\{(\w+)(?::\w+)?\}")


@dataclass(frozen=True)
class Unsupported:
    """A tool the original offers that ValueRank has no feature for: it answers this error."""

    code: str
    message: str
    hint: str


@dataclass(frozen=True)
class ToolSpec:
    """One tool. `route`: the API's own path template (as in /openapi.json), its `{params}`
    filled from the arguments of the same name; the other arguments are the query (GET,
    DELETE) or the JSON body. `fixed_body`: body fields the tool always sends (and does not
    take). `pick`: the answer's fields the tool returns (None: the whole answer). `arguments`:
    extra arguments (JSON schemas) that the route does not declare, handled by the server;
    `admin`: documented as an admin tool (the API itself refuses other roles)."""

    name: str
    description: str
    method: Method
    route: str
    admin: bool = False
    fixed_body: Mapping[str, Any] = field(default_factory=dict)
    pick: tuple[str, ...] | None = None
    arguments: Mapping[str, Any] = field(default_factory=dict)
    drop_arguments: tuple[str, ...] = ()  # route parameters the tool does not offer
    optional: tuple[str, ...] = ()  # route parameters the tool does not require
    # The original's argument name → the route's parameter it fills (`run_id` → `run`).
    renames: Mapping[str, str] = field(default_factory=dict)
    unsupported: Unsupported | None = None
    # The route whose answer the tool returns, when not its own (compare_runs queues with
    # one route and answers what another reads).
    answers_as: str | None = None

    @property
    def path_params(self) -> list[str]:
        return PATH_PARAM.findall(self.route)

    @property
    def sends_body(self) -> bool:
        return self.method in ("POST", "PUT", "PATCH")

    @property
    def read_only(self) -> bool:
        return self.method == "GET" or self.unsupported is not None
