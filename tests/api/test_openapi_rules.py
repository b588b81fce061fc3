"""The rules the server applies to a request are in /openapi.json wherever a JSON Schema can
state them (issue 21): a body the server refuses as malformed is one the schema refuses too,
so schemathesis's positive_data_acceptance holds. What no schema can say (an opaque cursor,
a file's contents, which models this install has) is listed in schemathesis.toml."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import jsonschema_rs  # schemathesis's own validator (a dependency of it)

from valuerank.api.limits import MAX_BODY_BYTES

from .conftest import Live, MakeRun

AssertError = Callable[[httpx.Response, int, str], dict[str, Any]]


async def _document(live: Live) -> dict[str, Any]:
    async with live.client() as client:
        document: dict[str, Any] = (await client.get("/openapi.json")).json()
    return document


def _body_validator(document: dict[str, Any], path: str, method: str) -> Any:
    schema = document["paths"][path][method]["requestBody"]["content"]["application/json"]
    root = {**schema["schema"], "components": document["components"]}
    return jsonschema_rs.Draft202012Validator(root)


# Bodies the server refuses (422) for a rule of their form: (path, method, url, body).
REFUSED = [
    ("/api/assumptions/tasks", "post", None, {"name": "   "}),
    ("/api/users", "post", None, {"email": "000", "role": "member"}),
    ("/api/users", "post", None, {"email": "a@b.c", "role": "member", "password": "short"}),
    ("/api/webhooks", "post", None, {"url": "00000000"}),
    ("/api/webhooks", "post", None, {"url": "ftp://example.org/hook"}),
    (
        "/api/runs/compare",
        "post",
        None,
        {"baseline_run_id": "0", "comparison_run_id": "0", "correction": ""},
    ),
    ("/api/models/{model_id}", "patch", "/api/models/openai:gpt-4.1", {"active": None}),
    ("/api/models/{model_id}", "patch", "/api/models/openai:gpt-4.1", {}),
    ("/api/models/{model_id}", "put", "/api/models/openai:gpt-4.1", {"weight": None}),
    ("/api/definitions", "post", None, {"markdown": "# Template\nx", "name": "both"}),
    ("/api/definitions", "post", None, {"name": "no template"}),
    (
        "/api/scenarios/expand",
        "post",
        None,
        {"definition_id": "0", "sample_percentage": 5, "sample_size": 1},
    ),
    ("/api/orgs", "post", None, {"name": "!!!"}),
    ("/api/users", "post", None, {"email": "a@b\x1cc", "role": "member"}),  # Python's blank
    ("/api/scenarios/expand", "post", None, {"definition_id": "0", "sample_seed": -1}),
    (
        "/api/providers/{provider}/limits",
        "put",
        "/api/providers/openai/limits",
        {"concurrency": 100_001},
    ),
    ("/api/credentials/{provider}", "put", "/api/credentials/openai", {"api_key": "sk one two"}),
    (
        "/api/assumptions/tasks/{task_id}/tags/{ra_tag_id}/validations",
        "post",
        "/api/assumptions/tasks/1/tags/ra_1/validations",
        {"validator_id": "0", "outcome": "validated", "confidence": 50},
    ),
    ("/api/orgs", "post", None, {"name": "Lab", "slug": "-lab"}),
]


async def test_a_body_the_server_refuses_is_one_the_schema_refuses(live: Live) -> None:
    document = await _document(live)
    async with live.client() as client:
        for path, method, url, body in REFUSED:
            assert not _body_validator(document, path, method).is_valid(body), (path, body)
            response = await client.request(method, url or path, json=body)
            assert response.status_code == 422, (path, body, response.text)


async def test_the_schema_still_allows_what_the_server_takes(live: Live) -> None:
    document = await _document(live)
    allowed = [
        ("/api/scenarios/expand", "post", {"definition_id": "0", "sample_size": 1}),
        (
            "/api/scenarios/expand",
            "post",
            {"definition_id": "0", "sample_percentage": None, "sample_size": 1},
        ),
        ("/api/definitions", "post", {"markdown": "x", "name": None}),
        ("/api/orgs", "post", {"name": "  Lab 2 ", "slug": " lab-2 "}),
        ("/api/users", "post", {"email": " Ada@Example.org ", "role": "member"}),
        ("/api/webhooks", "post", {"url": "HTTPS://hooks.example.org/x?y=1"}),
        ("/api/models/{model_id}", "patch", {"input_price_per_mtok": None}),
    ]
    for path, method, body in allowed:
        assert _body_validator(document, path, method).is_valid(body), (path, body)


async def test_an_integer_sent_as_a_whole_float_is_taken(live: Live) -> None:
    # JSON Schema's `integer` includes 20.0; strict models used to refuse it.
    async with live.client() as client:
        pruned = await client.post("/api/system/queue/jobs/prune", json={"batch": 20.0})
        assert pruned.status_code == 200, pruned.text
        limits = await client.put(
            "/api/providers/openai/limits", json={"min_interval_ms": 10.0, "concurrency": 2.0}
        )
        assert limits.status_code == 200, limits.text
        # A fraction, a string or a boolean is still no integer.
        for bad in (20.5, "20", True):
            refused = await client.post("/api/system/queue/jobs/prune", json={"batch": bad})
            assert refused.status_code == 422, (bad, refused.text)


async def test_every_text_field_fits_under_the_body_limit(
    live: Live, assert_error: AssertError
) -> None:
    """A text one character past its maxLength is a 422 naming the field, not a 413: even
    at 12 bytes a character (an escaped surrogate pair) it fits under the body limit."""
    document = await _document(live)
    longest = 0
    for schema in document["components"]["schemas"].values():
        for field in schema.get("properties", {}).values():
            for part in [field, *field.get("anyOf", [])]:
                if part.get("type") == "string" and "maxLength" in part:
                    longest = max(longest, part["maxLength"])
    assert 12 * (longest + 1) + 4096 <= MAX_BODY_BYTES, longest
    too_long = "\U0001f600" * (longest + 1)
    async with live.client() as client:
        response = await client.post("/api/definitions/validate", json={"markdown": too_long})
    body = assert_error(response, 422, "VALIDATION_ERROR")
    assert "markdown" in body["error"]


async def test_expanding_a_run_past_its_sample_only_is_a_conflict(
    live: Live, make_run: MakeRun, assert_error: AssertError
) -> None:
    run = await make_run(live.org_id, decisions={"scripted:utilitarian": [1, 2, 5]})
    async with live.client() as client:
        response = await client.post(f"/api/runs/{run.id}/expand", json={"sample_percentage": 1})
    assert_error(response, 409, "CONFLICT")  # well formed; the run's state is in the way


async def test_405s_name_the_methods_of_the_path_itself(live: Live) -> None:
    # Paths of their own that a template also matches (`/api/runs/{run_id}`, the models'
    # `/{model_id:path}`): their Allow is theirs, and `check` is no model id.
    async with live.client() as client:
        for method, path, allow in (
            ("OPTIONS", "/api/runs/compare", "POST"),
            ("OPTIONS", "/api/users/invitations", "GET"),
            ("OPTIONS", "/api/definitions/import", "POST"),
            ("PUT", "/api/models/check", "POST"),
            ("GET", "/api/models/check", "POST"),
        ):
            response = await client.request(method, path, json={"models": ["openai:x"]})
            assert response.status_code == 405, (method, path, response.text)
            assert response.headers["allow"] == allow, (method, path)
            assert response.json()["code"] == "METHOD_NOT_ALLOWED"


async def test_what_the_last_schemathesis_run_found_is_stated_or_refused(
    live: Live, assert_error: AssertError
) -> None:
    """The three drifts left after the first passes: a number read as a date-time, a NUL the
    schema forbade in a file field that the server takes (and reports as the file's error),
    and a seed past what a JSON reader holds exactly."""
    document = await _document(live)
    async with live.client() as client:
        numeric = await client.get("/api/runs", params={"created_until": "0.5"})
        assert_error(numeric, 422, "VALIDATION_ERROR")
        iso = await client.get("/api/runs", params={"created_until": "2024-01-01T00:00:00Z"})
        assert iso.status_code == 200, iso.text
        checked = await client.post(
            "/api/definitions/validate", json={"markdown": "---\nname: a\x00b\n---\n"}
        )
        assert checked.status_code == 200 and checked.json()["data"]["valid"] is False
        too_big = await client.post(
            "/api/scenarios/expand", json={"definition_id": "x", "seed": 2**53}
        )
        assert_error(too_big, 422, "VALIDATION_ERROR")
    validate = _body_validator(document, "/api/definitions/validate", "post")
    assert validate.is_valid({"markdown": "a\x00b"})  # the schema takes what the server takes
    rubric = _body_validator(document, "/api/rubrics", "post")
    assert rubric.is_valid({"name": "r", "yaml": "a\x00b"})
    assert not rubric.is_valid({"name": "r\x00", "yaml": "a"})
    body = document["paths"]["/api/scenarios/expand"]["post"]["requestBody"]["content"]
    schema = body["application/json"]["schema"]
    if "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    seed = schema["properties"]["seed"]
    assert [part.get("maximum") for part in seed["anyOf"] if part.get("type") == "integer"] == [
        2**53 - 1
    ]
