"""What /openapi.json says and what the server answers agree where schemathesis found them
apart (issue 21): a 405's `Allow` lists every documented method of the path, the deep
analysis's `meta.deepCached` is documented, and the rules of task ids and model ids are in
the schema, so a value the schema allows is never refused as malformed."""

from __future__ import annotations

import re
from typing import Any

import schemathesis
from schemathesis.specs.openapi.checks import response_schema_conformance

from valuerank.providers.model_id import MODEL_ID_PATTERN

from .conftest import Live, MakeRun

HTTP_METHODS = {"get", "put", "post", "delete", "patch"}


async def _schema(live: Live) -> dict[str, Any]:
    async with live.client() as client:
        document: dict[str, Any] = (await client.get("/openapi.json")).json()
    return document


def _parameter(document: dict[str, Any], path: str, method: str, name: str) -> dict[str, Any]:
    for parameter in document["paths"][path][method]["parameters"]:
        if parameter["name"] == name:
            found: dict[str, Any] = parameter["schema"]
            return found
    raise AssertionError(f"{method} {path} has no parameter {name}")


async def test_a_405_allows_every_documented_method_of_its_path(live: Live) -> None:
    document = await _schema(live)
    # Paths served by several routes (one per method), where Starlette's own Allow named
    # only the first route's methods.
    paths = ["/api/webhooks", "/api/webhooks/{webhook_id}", "/api/assumptions/tasks"]
    concrete = {"/api/webhooks/{webhook_id}": "/api/webhooks/wh_1"}
    async with live.client() as client:
        for path in paths:
            response = await client.request("OPTIONS", concrete.get(path, path))
            assert response.status_code == 405, response.text
            assert response.json()["code"] == "METHOD_NOT_ALLOWED"
            allowed = {m.strip().lower() for m in response.headers["allow"].split(",")}
            documented = set(document["paths"][path]) & HTTP_METHODS
            assert allowed - {"head"} == documented, (path, response.headers["allow"])


async def test_the_deep_analysis_answer_matches_its_schema(live: Live, make_run: MakeRun) -> None:
    run = await make_run(live.org_id, decisions={"scripted:utilitarian": [1, 2, 5]})
    async with live.client() as client:
        response = await client.get(f"/api/runs/{run.id}/analysis", params={"deep": "true"})
        document = (await client.get("/openapi.json")).json()
    assert response.status_code == 202, response.text
    assert response.json()["data"]["meta"]["deepCached"] is False
    schema = schemathesis.openapi.from_dict(document)
    operation = schema["/api/runs/{run_id}/analysis"]["GET"]
    case = operation.Case(path_parameters={"run_id": run.id}, query={"deep": True})
    # Raises when the answer has a field its documented model lacks (additionalProperties).
    case.validate_response(response, checks=[response_schema_conformance])


async def test_task_ids_the_schema_allows_are_looked_up(live: Live) -> None:
    document = await _schema(live)
    pattern = _parameter(document, "/api/assumptions/tasks/{task_id}", "get", "task_id")["pattern"]
    async with live.client() as client:
        for good in ("1", "42", "999999999999999999"):
            assert re.search(pattern, good)
            response = await client.get(f"/api/assumptions/tasks/{good}")
            assert response.status_code == 404, response.text  # unknown, not malformed
            assert response.json()["code"] == "TASK_NOT_FOUND"
        for bad in ("0", "007", "-1", "1.5", "abc", "9" * 19):
            assert not re.search(pattern, bad)
            response = await client.get(f"/api/assumptions/tasks/{bad}")
            assert response.status_code == 422, (bad, response.text)
            assert response.json()["code"] == "INVALID_TASK_ID"


async def test_model_ids_have_their_format_in_the_schema(live: Live) -> None:
    document = await _schema(live)
    pattern = _parameter(document, "/api/models/{model_id}", "get", "model_id")["pattern"]
    async with live.client() as client:
        unknown = await client.get("/api/models/openai:no-such-model")
        assert re.search(pattern, "openai:no-such-model")
        assert unknown.status_code == 404, unknown.text
        for bad in ("0", "openai:", "openai: ", "OpenAI:x"):
            assert not re.search(pattern, bad)
            response = await client.get(f"/api/models/{bad}")
            assert response.status_code == 422, (bad, response.text)
        # In bodies the same pattern is enforced: a malformed id is a VALIDATION_ERROR.
        checked = await client.post("/api/models/check", json={"models": ["000"]})
        assert checked.status_code == 422 and checked.json()["code"] == "VALIDATION_ERROR"
    ref = document["paths"]["/api/models/check"]["post"]["requestBody"]["content"][
        "application/json"
    ]["schema"]["$ref"]
    body_schema = document["components"]["schemas"][ref.rsplit("/", 1)[-1]]
    assert body_schema["properties"]["models"]["items"]["pattern"] == MODEL_ID_PATTERN
    # The path's names the known providers too (PUT refuses another; the check's body
    # reports it as UNKNOWN_MODEL).
    assert pattern.endswith(MODEL_ID_PATTERN.split(":", 1)[1])
    assert re.search(pattern, "scripted:x") and not re.search(pattern, "nowhere:x")
