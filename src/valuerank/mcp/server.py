"""The MCP server (the SDK's low-level `Server`): its tools, resources and how a call runs.

Every tool call and every run's analysis is one request (compare_runs: a few) to the JSON
API as the caller (`valuerank.mcp.gateway`): the API decides who may do what and in which
organisation, so another organisation's id is NOT_FOUND here as there, a member calling an
admin tool gets FORBIDDEN, and the answers are the API's own shapes. Errors are tool errors
(`isError`), their text `CODE: message` and the hint, their structured content the API's
`{code, error, hint}`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

import mcp_types as types
from jsonschema import Draft202012Validator
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError

from valuerank import __version__
from valuerank.errors import ValueRankError
from valuerank.mcp.calls import (
    ApiRequest,
    ToolFailure,
    as_text,
    failure_text,
    structured,
    to_request,
)
from valuerank.mcp.gateway import Gateway
from valuerank.mcp.resources import (
    ANALYSIS_TEMPLATE,
    read_run_analysis,
    read_static,
    static_resources,
)
from valuerank.mcp.schemas import input_schema, output_schema
from valuerank.mcp.spec import ToolSpec
from valuerank.mcp.tools_analysis import ANALYSIS_TOOLS
from valuerank.mcp.tools_definitions import DEFINITION_TOOLS
from valuerank.mcp.tools_models import MODEL_TOOLS
from valuerank.mcp.tools_ops import OPS_TOOLS
from valuerank.mcp.tools_runs import RUN_TOOLS

TOOLS: tuple[ToolSpec, ...] = (
    *DEFINITION_TOOLS,
    *RUN_TOOLS,
    *ANALYSIS_TOOLS,
    *MODEL_TOOLS,
    *OPS_TOOLS,
)
BY_NAME = {spec.name: spec for spec in TOOLS}
COMPARE_WAIT_SECONDS = 20.0
COMPARE_POLL_SECONDS = 0.25
INSTRUCTIONS = (
    "ValueRank measures how AI models prioritise human values in moral dilemmas. Write a "
    "definition (read valuerank://guide/definitions and the examples), store it with "
    "create_definition, start_run on some models, poll get_run_status until it is "
    "completed, then read get_run_summary, get_value_sensitivity, get_dimension_analysis "
    "or the resource valuerank://runs/{run_id}/analysis. Errors carry a code and a hint."
)

GatewayFor = Callable[[ServerRequestContext[Any, Any]], Gateway]


def _tool(spec: ToolSpec, openapi: Mapping[str, Any]) -> types.Tool:
    return types.Tool(
        name=spec.name,
        description=spec.description,
        input_schema=input_schema(spec, openapi),
        output_schema=output_schema(spec, openapi),
        annotations=types.ToolAnnotations(
            read_only_hint=spec.read_only,
            destructive_hint=spec.name.startswith(("delete_", "cancel_")),
        ),
    )


class Tools:
    """The tools as listed (their schemas built once per API document)."""

    def __init__(self) -> None:
        self._listed: tuple[int, list[types.Tool]] | None = None

    def listed(self, openapi: Mapping[str, Any]) -> list[types.Tool]:
        if self._listed is None or self._listed[0] != id(openapi):
            self._listed = (id(openapi), [_tool(spec, openapi) for spec in TOOLS])
        return self._listed[1]

    def check(self, spec: ToolSpec, openapi: Mapping[str, Any], arguments: Any) -> None:
        """INVALID_INPUT unless `arguments` fit the tool's input schema."""
        schema = next(t.input_schema for t in self.listed(openapi) if t.name == spec.name)
        errors = sorted(Draft202012Validator(schema).iter_errors(arguments), key=str)
        if errors:
            where = "/".join(str(p) for p in errors[0].absolute_path) or "arguments"
            raise ToolFailure(
                "INVALID_INPUT",
                f"{spec.name}: {where}: {errors[0].message}",
                hint="see the tool's input schema (tools/list)",
            )


async def _compare(gateway: Gateway, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """compare_runs: queue the comparison (or take `comparison_id`), then read it until it is
    done or `wait_seconds` pass (a queued one is answered as it stands: read it again with
    its `comparison_id`)."""
    spec = BY_NAME["compare_runs"]
    comparison_id = arguments.get("comparison_id")
    if not comparison_id:
        request = to_request(spec, arguments, extra=("comparison_id", "wait_seconds"))
        queued = structured(spec, *await gateway.send(request))
        comparison_id = str(queued["comparison_id"])
    read = ApiRequest("GET", f"/api/comparisons/{quote(str(comparison_id), safe='')}")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + float(arguments.get("wait_seconds", COMPARE_WAIT_SECONDS))
    while True:
        answer = structured(spec, *await gateway.send(read))
        if answer.get("status") not in ("queued", "running") or loop.time() >= deadline:
            return answer
        await asyncio.sleep(COMPARE_POLL_SECONDS)


async def call_tool(
    tools: Tools, gateway: Gateway, name: str, arguments: Mapping[str, Any]
) -> dict[str, Any]:
    """One tool call's structured output; a ValueRankError when it failed."""
    spec = BY_NAME.get(name)
    if spec is None:
        raise ToolFailure("UNKNOWN_TOOL", f"no tool {name!r}", hint="list the tools")
    if spec.unsupported is None:
        tools.check(spec, await gateway.openapi(), dict(arguments))
    if spec.name == "compare_runs":
        return await _compare(gateway, arguments)
    request = to_request(spec, arguments)
    return structured(spec, *await gateway.send(request))


def _error_result(failure: ValueRankError) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=failure_text(failure))],
        structured_content=failure.to_dict(),
        is_error=True,
    )


def build_server(gateway_for: GatewayFor) -> Server[Any]:
    """The server; `gateway_for` gives each request's way to the API (as its caller)."""
    tools = Tools()

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools.listed(await gateway_for(ctx).openapi()))

    async def on_call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:
            output = await call_tool(tools, gateway_for(ctx), params.name, params.arguments or {})
        except ValueRankError as failure:
            return _error_result(failure)
        return types.CallToolResult(
            content=[types.TextContent(text=as_text(output))], structured_content=output
        )

    async def list_resources(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=r.uri,
                    name=r.name,
                    title=r.title,
                    description=r.description,
                    mime_type=r.mime_type,
                )
                for r in static_resources()
            ]
        )

    async def list_templates(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        template = types.ResourceTemplate(
            uri_template=ANALYSIS_TEMPLATE,
            name="run-analysis",
            title="A run's analysis",
            description="The run's basic analysis, as `valuerank analyze RUN --json` gives "
            "it (per model, value sensitivity, dimensions, agreement, robustness).",
            mime_type="application/json",
        )
        return types.ListResourceTemplatesResult(resource_templates=[template])

    async def read_resource(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            text = await read_run_analysis(gateway_for(ctx), uri)
            mime = "application/json"
            if text is None:
                text = read_static(uri)
                mime = next(r.mime_type for r in static_resources() if r.uri == uri)
        except ValueRankError as failure:
            # A resource has no tool-error form: a JSON-RPC error whose data is our code.
            raise MCPError(
                types.INVALID_PARAMS, failure_text(failure), failure.to_dict()
            ) from failure
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=text)]
        )

    return Server(
        "valuerank",
        version=__version__,
        title="ValueRank",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )
