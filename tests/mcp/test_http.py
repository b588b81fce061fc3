"""`/mcp` of `valuerank serve` (streamable HTTP), driven by the SDK's client on both backends:
a whole run through the tools, the numbers equal to `valuerank analyze --json`, and the API's
organisation scoping, roles, token-only authentication and rate limits."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from mcp.shared.exceptions import MCPError
from tests.api.conftest import TOKEN, Live, api_settings
from tests.servers import running

from valuerank.accounts import Role
from valuerank.api import create_app

from .conftest import (
    MODELS,
    Invoke,
    error_code,
    http_session,
    ok,
    same_numbers,
    start_demo_run,
    wait_ended,
    working,
)

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "tests", "version": "0"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}
TOOLS = {
    "list_definitions", "get_definition", "create_definition", "fork_definition",
    "validate_definition", "delete_definition", "generate_scenarios_preview", "list_runs",
    "start_run", "get_run_status", "pause_run", "resume_run", "cancel_run", "delete_run",
    "get_run_summary", "get_dimension_analysis", "get_value_sensitivity", "get_transcript",
    "search_transcripts", "compare_runs", "list_llm_providers", "list_llm_models",
    "get_llm_model", "create_llm_model", "update_llm_model", "deprecate_llm_model",
    "reactivate_llm_model", "set_provider_limits", "get_job_queue_status", "trigger_recovery",
}  # fmt: skip


async def test_a_run_through_the_tools(mcp_live: Live, cli: Invoke) -> None:
    async with working(mcp_live), http_session(mcp_live.url) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == TOOLS
        start = tools["start_run"].input_schema
        assert {"definition_id", "models", "sample_percentage", "sample_seed"} <= set(
            start["properties"]
        )
        assert start["required"] == ["definition_id", "models"]
        assert "run_id" in tools["get_run_summary"].input_schema["required"]

        run_id, started = await start_demo_run(session)
        # start_run answers the cost estimate (scripted models cost nothing, and say so).
        estimate = started["estimate"]
        assert estimate["cost_usd"] == 0 and estimate["calls"] == started["jobs"] > 0
        assert started["models"] == MODELS
        assert (await wait_ended(session, run_id))["status"] == "completed"
        listed = ok(await session.call_tool("list_runs", {"status": "completed"}))
        assert [r["id"] for r in listed["runs"]] == [run_id]

        summary = ok(await session.call_tool("get_run_summary", {"run_id": run_id}))
        assert set(summary["perModel"]) == set(MODELS)
        sensitivity = ok(await session.call_tool("get_value_sensitivity", {"run_id": run_id}))
        assert set(sensitivity["valueSensitivity"]) == set(MODELS)
        dimensions = ok(await session.call_tool("get_dimension_analysis", {"run_id": run_id}))
        assert dimensions["dimensionAnalysis"]
        found = ok(await session.call_tool("search_transcripts", {"run_id": run_id, "limit": 2}))
        assert found["total"] == 2 * summary["meta"]["scenarios"] and len(found["transcripts"]) == 2
        transcript = ok(
            await session.call_tool(
                "get_transcript", {"transcript_id": found["transcripts"][0]["id"]}
            )
        )
        assert transcript["run_id"] == run_id

        # The run's whole analysis is a resource.
        templates = (await session.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["valuerank://runs/{run_id}/analysis"]
        read = await session.read_resource(f"valuerank://runs/{run_id}/analysis")
        analysis_text = read.contents[0].text  # type: ignore[union-attr]
        assert '"valueSensitivity"' in analysis_text

    # The same numbers as the CLI's analysis of the same run (a thread: the CLI runs its own
    # event loop).
    same_numbers(summary, (await asyncio.to_thread(cli, "analyze", run_id))["analysis"])


async def test_definitions_errors_and_resources(mcp_live: Live) -> None:
    async with http_session(mcp_live.url) as session:
        bad = await session.call_tool("validate_definition", {"markdown": "# Preamble\n"})
        checked = ok(bad)
        assert checked["valid"] is False and "Template" in checked["error"]["message"]
        stored = ok(await session.call_tool("create_definition", {"markdown": _demo()}))
        forked = ok(
            await session.call_tool(
                "fork_definition",
                {"definition_id": stored["id"], "changes": {"category": "Forked"}},
            )
        )
        assert forked["parent_id"] == stored["id"] and forked["version_label"] == "v1.1"
        listed = ok(await session.call_tool("list_definitions", {"label": "v1.1"}))
        assert [d["id"] for d in listed["definitions"]] == [forked["id"]]
        preview = ok(
            await session.call_tool(
                "generate_scenarios_preview",
                {"definition_id": stored["id"], "sample_percentage": 10, "sample_seed": 3},
            )
        )
        assert 0 < len(preview["scenarios"]) < 27
        # No backing feature: a coded error, never a pretence.
        deleted = await session.call_tool("delete_definition", {"definition_id": stored["id"]})
        assert error_code(deleted) == "DEFINITION_DELETE_UNSUPPORTED"
        # Arguments are checked against the tool's schema.
        assert error_code(await session.call_tool("get_run_status", {})) == "INVALID_INPUT"
        wrong = await session.call_tool("get_run_status", {"run_id": "x", "runid": "x"})
        assert error_code(wrong) == "INVALID_INPUT"
        # The API's own codes and hints.
        missing = await session.call_tool("get_run_status", {"run_id": "ffffffff"})
        assert error_code(missing) == "NOT_FOUND"
        assert "hint: " in missing.content[0].text  # type: ignore[union-attr]

        resources = {r.uri: r for r in (await session.list_resources()).resources}
        assert set(resources) == {
            "valuerank://guide/definitions",
            "valuerank://examples/exp-demo-whistleblower.md",
            "valuerank://rubrics/default",
        }
        guide = await session.read_resource("valuerank://guide/definitions")
        assert "# Dimensions" in guide.contents[0].text  # type: ignore[union-attr]
        example = await session.read_resource("valuerank://examples/exp-demo-whistleblower.md")
        assert example.contents[0].text == _demo()  # type: ignore[union-attr]
        rubric = await session.read_resource("valuerank://rubrics/default")
        assert "Physical_Safety" in rubric.contents[0].text  # type: ignore[union-attr]
        try:
            await session.read_resource("valuerank://runs/ffffffff/analysis")
        except MCPError as exc:
            assert exc.data["code"] == "NOT_FOUND"
        else:
            raise AssertionError("an unknown run's analysis was read")


def _demo() -> str:
    from .conftest import DEMO

    return DEMO.read_text()


async def test_another_organisations_run_is_not_found(mcp_live: Live) -> None:
    stranger = await mcp_live.account("elsewhere", Role.ADMIN)  # before the worker writes
    async with working(mcp_live), http_session(mcp_live.url) as session:
        run_id, _ = await start_demo_run(session)
        assert (await wait_ended(session, run_id))["status"] == "completed"
    async with http_session(mcp_live.url, stranger.token) as session:
        for tool in ("get_run_status", "get_run_summary", "cancel_run", "delete_run"):
            assert error_code(await session.call_tool(tool, {"run_id": run_id})) == "NOT_FOUND"
        try:
            await session.read_resource(f"valuerank://runs/{run_id}/analysis")
        except MCPError as exc:
            assert exc.data["code"] == "NOT_FOUND"
        else:
            raise AssertionError("another organisation's analysis was read")
        assert ok(await session.call_tool("list_runs", {}))["runs"] == []
    # ...while its own organisation still sees it.
    async with http_session(mcp_live.url) as session:
        assert ok(await session.call_tool("get_run_status", {"run_id": run_id}))["id"] == run_id


async def test_admin_tools_need_the_admin_role(mcp_live: Live) -> None:
    member = await mcp_live.account("default", Role.MEMBER)
    admin_calls: dict[str, dict[str, Any]] = {
        "create_llm_model": {"model_id": "scripted:newcomer", "display_name": "N"},
        "update_llm_model": {"model_id": "scripted:utilitarian", "weight": 2},
        "deprecate_llm_model": {"model_id": "scripted:utilitarian"},
        "reactivate_llm_model": {"model_id": "scripted:utilitarian"},
        "set_provider_limits": {"provider": "scripted", "rpm": 100},
        "trigger_recovery": {},
    }
    async with http_session(mcp_live.url, member.token) as session:
        for tool, arguments in admin_calls.items():
            assert error_code(await session.call_tool(tool, arguments)) == "FORBIDDEN", tool
        # ...the reads are theirs.
        models = ok(await session.call_tool("list_llm_models", {}))
        assert any(m["id"] == "scripted:utilitarian" for m in models["models"])
        ok(await session.call_tool("get_job_queue_status", {}))
    async with http_session(mcp_live.url) as session:  # the default organisation's admin
        deprecated = ok(
            await session.call_tool("deprecate_llm_model", admin_calls["deprecate_llm_model"])
        )
        assert deprecated["active"] is False
        model = ok(await session.call_tool("get_llm_model", {"model_id": "scripted:utilitarian"}))
        assert model["active"] is False
        back = ok(
            await session.call_tool("reactivate_llm_model", admin_calls["reactivate_llm_model"])
        )
        assert back["active"] is True
        limits = ok(
            await session.call_tool("set_provider_limits", admin_calls["set_provider_limits"])
        )
        assert limits["rpm"] == 100
        ok(await session.call_tool("trigger_recovery", {}))
        providers = ok(await session.call_tool("list_llm_providers", {}))
        assert any(p["name"] == "scripted" for p in providers["providers"])


async def test_only_an_api_token_opens_mcp(mcp_live: Live) -> None:
    initialize, accept = INITIALIZE, ACCEPT
    async with mcp_live.client(token=None, headers=accept) as anonymous:
        refused = await anonymous.post("/mcp", json=initialize)
        assert refused.status_code == 401 and refused.json()["code"] == "UNAUTHORIZED"
    async with mcp_live.client(token="vrt_" + "x" * 43, headers=accept) as wrong:
        assert (await wrong.post("/mcp", json=initialize)).status_code == 401
    # A browser's session (opened from the token, with its CSRF token) is refused too.
    async with mcp_live.client(token=None) as browser:
        jump = await browser.get("/", params={"token": TOKEN})
        assert jump.status_code == 303
        port = mcp_live.url.rsplit(":", 1)[1]
        csrf = jump.cookies[f"valuerank_csrf_{port}"]
        cookies = httpx.Cookies(
            {f"valuerank_session_{port}": jump.cookies[f"valuerank_session_{port}"]}
        )
    async with mcp_live.client(
        token=None, headers={**accept, "X-CSRF-Token": csrf}, cookies=cookies
    ) as browser:
        assert (await browser.get("/api/auth/me")).status_code == 200  # the session works...
        with_cookie = await browser.post("/mcp", json=initialize)
        assert with_cookie.status_code == 401  # ...but not for MCP
        assert "/mcp takes an API token only" in with_cookie.json()["error"]
    async with mcp_live.client(headers=accept) as scripted:
        answered = await scripted.post("/mcp", json=initialize)
        assert (
            answered.status_code == 200
            and answered.json()["result"]["serverInfo"]["name"] == "valuerank"
        )


async def test_mcp_counts_against_the_rate_limit(mcp_live: Live) -> None:
    """A request to /mcp counts against the token's standard limit like any API request."""
    app = create_app(
        mcp_live.db,
        org_id=mcp_live.org_id,
        settings=api_settings(rate_limits_enabled=True, rate_limit_standard="3/minute"),
    )
    async with (
        running(app) as url,
        httpx.AsyncClient(
            base_url=url, headers={"Authorization": f"Bearer {TOKEN}", **ACCEPT}
        ) as client,
    ):
        statuses = [(await client.post("/mcp", json=INITIALIZE)).status_code for _ in range(4)]
        assert statuses == [200, 200, 200, 429]
        refused = await client.post("/mcp", json=INITIALIZE)
        assert refused.json()["code"] == "RATE_LIMITED" and refused.headers["retry-after"]


async def test_run_controls(mcp_live: Live) -> None:
    """pause, resume, cancel and delete, with no worker: the run stays where the tools put it."""
    async with http_session(mcp_live.url) as session:
        run_id, _ = await start_demo_run(session)
        assert ok(await session.call_tool("pause_run", {"run_id": run_id}))["status"] == "paused"
        resumed = ok(await session.call_tool("resume_run", {"run_id": run_id}))
        assert resumed["status"] == "running"
        active = await session.call_tool("delete_run", {"run_id": run_id})
        assert error_code(active) == "RUN_ACTIVE"  # cancel it first, says the hint
        cancelled = ok(await session.call_tool("cancel_run", {"run_id": run_id}))
        assert cancelled["status"] == "cancelled"
        assert ok(await session.call_tool("delete_run", {"run_id": run_id}))["deleted"]
        gone = await session.call_tool("get_run_status", {"run_id": run_id})
        assert error_code(gone) == "NOT_FOUND"
        queue = ok(await session.call_tool("get_job_queue_status", {}))
        assert "counts" in queue


async def test_compare_runs_waits_for_the_comparison(mcp_live: Live) -> None:
    async with working(mcp_live), http_session(mcp_live.url) as session:
        first, _ = await start_demo_run(session)
        second, _ = await start_demo_run(session)  # the same seed: the same scenarios
        for run_id in (first, second):
            assert (await wait_ended(session, run_id))["status"] == "completed"
        arguments = {"baseline_run_id": first, "comparison_run_id": second, "wait_seconds": 60}
        compared = ok(await session.call_tool("compare_runs", arguments))
        assert compared["status"] == "completed" and compared["result"]
        again = ok(await session.call_tool("compare_runs", {"comparison_id": compared["id"]}))
        assert again["id"] == compared["id"] and again["result"] == compared["result"]
        assert error_code(await session.call_tool("compare_runs", {})) == "VALIDATION_ERROR"
