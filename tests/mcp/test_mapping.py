"""The pure part of the MCP server: which route each tool is, its schemas read from the API's
own /openapi.json, and a call's arguments as the request (no server, no database)."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from tests.api.conftest import api_settings

from valuerank.api import create_app
from valuerank.db import create_database
from valuerank.mcp.calls import ApiRequest, ToolFailure, structured, to_request
from valuerank.mcp.schemas import input_schema, output_schema
from valuerank.mcp.server import BY_NAME, TOOLS


@cache
def openapi() -> dict[str, Any]:
    """The app's document (building the app opens no connection)."""
    app = create_app(create_database("sqlite:///unused.db"), org_id="o", settings=api_settings())
    return app.openapi()


def test_every_backed_tool_names_a_documented_route() -> None:
    paths = openapi()["paths"]
    for spec in TOOLS:
        if spec.unsupported is None:
            assert spec.method.lower() in paths.get(spec.route, {}), spec.name
            for name in spec.drop_arguments + tuple(spec.renames.values()):
                parameters = {p["name"] for p in paths[spec.route][spec.method.lower()].get(
                    "parameters", [])} | {"*body"}  # fmt: skip
                assert name in parameters, (spec.name, name)
    assert len(TOOLS) == len(BY_NAME) == 30


@pytest.mark.parametrize("spec", TOOLS, ids=lambda s: s.name)
def test_schemas_are_valid_and_self_contained(spec: Any) -> None:
    for schema in (input_schema(spec, openapi()), output_schema(spec, openapi())):
        Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object"
        assert "#/components/" not in str(schema)  # every reference resolved into $defs
    arguments = input_schema(spec, openapi())
    assert arguments["additionalProperties"] is False
    assert set(spec.path_params) <= set(arguments.get("required", []))


def test_arguments_are_named_as_the_original_names_them() -> None:
    start = input_schema(BY_NAME["start_run"], openapi())
    assert {"definition_id", "models", "sample_percentage", "sample_seed"} <= set(
        start["properties"]
    )
    listed = input_schema(BY_NAME["list_runs"], openapi())["properties"]
    assert "definition_id" in listed and "definition" not in listed
    search = input_schema(BY_NAME["search_transcripts"], openapi())["properties"]
    assert {"run_id", "query"} <= set(search) and not {"run", "q"} & set(search)
    # A tool that always sends a field does not take it.
    assert set(input_schema(BY_NAME["deprecate_llm_model"], openapi())["properties"]) == {
        "model_id"
    }
    # compare_runs reads a queued comparison with its id alone.
    compare = input_schema(BY_NAME["compare_runs"], openapi())
    assert "required" not in compare and "comparison_id" in compare["properties"]


def test_outputs_are_the_routes_answers() -> None:
    summary = output_schema(BY_NAME["get_run_summary"], openapi())
    assert set(summary["properties"]) == set(BY_NAME["get_run_summary"].pick or ())
    status = output_schema(BY_NAME["get_run_status"], openapi())
    assert {"status", "progress"} <= set(status["properties"])
    assert output_schema(BY_NAME["delete_definition"], openapi())["additionalProperties"]


def test_a_call_becomes_its_request() -> None:
    assert to_request(BY_NAME["list_runs"], {"definition_id": "abcd", "status": "running"}) == (
        ApiRequest("GET", "/api/runs", [("definition", "abcd"), ("status", "running")])
    )
    made = to_request(BY_NAME["deprecate_llm_model"], {"model_id": "openrouter:meta/llama 3"})
    assert made == ApiRequest(
        "PATCH", "/api/models/openrouter%3Ameta%2Fllama%203", body={"active": False}
    )
    started = to_request(BY_NAME["start_run"], {"definition_id": "d", "models": ["a:b"]})
    assert started.body == {"definition_id": "d", "models": ["a:b"]} and not started.params
    with pytest.raises(ToolFailure) as missing:
        to_request(BY_NAME["get_run_status"], {})
    assert missing.value.code == "INVALID_INPUT"
    with pytest.raises(ToolFailure) as unsupported:
        to_request(BY_NAME["delete_definition"], {"definition_id": "d"})
    assert unsupported.value.code == "DEFINITION_DELETE_UNSUPPORTED" and unsupported.value.hint


def test_an_answer_becomes_the_tools_result() -> None:
    spec = BY_NAME["get_run_summary"]
    envelope = {"success": True, "data": {"perModel": {}, "meta": {}, "deep": None}}
    assert structured(spec, 200, envelope) == {"perModel": {}, "meta": {}}
    assert structured(BY_NAME["list_runs"], 200, {"success": True, "data": [1]}) == {"items": [1]}
    error = {"success": False, "code": "RUN_NOT_FOUND", "error": "no run", "hint": "list them"}
    with pytest.raises(ToolFailure) as failed:
        structured(spec, 404, error)
    assert failed.value.to_dict() == {
        "code": "RUN_NOT_FOUND",
        "error": "no run",
        "hint": "list them",
    }
    with pytest.raises(ToolFailure) as odd:
        structured(spec, 502, None)
    assert odd.value.code == "HTTP_502"
