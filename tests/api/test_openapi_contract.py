"""/openapi.json documents what every operation answers, and real answers match it.

- every operation documents its success answer (the envelope, with a model of its `data` for
  the seed's resources) and its failures (the error envelope for every 4xx and 5xx; FastAPI's
  own 422 body, which this API never sends, is nowhere);
- a body that breaks the documented schema is caught (so the fuzzer's schema check can fail);
- with real data seeded, a request to every operation gets an answer that matches the schema,
  status and media type it documents — the typed ones with a success — checked by
  schemathesis itself, on SQLite and PostgreSQL;
- a list that answers `next_cursor` takes `cursor`, or says it is not paginated.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import httpx
import pytest
import schemathesis
from pydantic import BaseModel
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from valuerank.api.reference import api_routes, reference_app
from valuerank.config import get_settings
from valuerank.crypto import generate_key

from .conftest import Live
from .operations import (
    QUERIES,
    SCHEMA,
    Ids,
    body,
    operations,
    ordered,
    path_ids,
    resolve,
)
from .seeding import Seeded, seed_organisation, shared_ids

CHECKS = [
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
    content_type_conformance,
]
# Every operation under these prefixes documents a model of its own `data` (the seed's
# resources); the rest may document the generic envelope (`data` of any shape).
TYPED_PREFIXES = (
    "/api/assumptions/",
    "/api/queue/",
    "/api/eval/",
    "/api/runs",
    "/api/comparisons/",
    "/api/experiments",
)
NOT_JSON = ("/events/stream",)  # a text/event-stream, tested with real clients elsewhere


def _operations() -> list[tuple[str, str, dict[str, Any]]]:
    return [(label.split(" ", 1)[0], path, op) for label, path, op in operations()]


def _typed(path: str) -> bool:
    return path.startswith(TYPED_PREFIXES) and not path.endswith(NOT_JSON)


def test_every_operation_documents_its_success_and_its_errors() -> None:
    components = SCHEMA["components"]["schemas"]
    assert "HTTPValidationError" not in components and "ValidationError" not in components
    untyped = []
    for method, path, operation in _operations():
        label = f"{method} {path}"
        responses = operation["responses"]
        for errors in ("4XX", "5XX"):
            schema = responses[errors]["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/ErrorEnvelope"}, label
        assert not [s for s in responses if s[0] == "4" and s != "4XX"], (label, responses)
        successes = [s for s in responses if s.startswith("2")]
        assert successes, label
        for status in successes:
            content = responses[status].get("content")
            assert content, f"{label} {status}: no media type documented"
            if "application/json" not in content:
                continue
            envelope = resolve(content["application/json"]["schema"])
            assert envelope["properties"]["success"]["const"] is True, label
            assert {"success", "data", "timestamp", "cached"} <= set(envelope["required"])
            assert envelope["additionalProperties"] is False, label
            if envelope["properties"]["data"] == {}:
                untyped.append(label)
    assert not [u for u in untyped if _typed(u.split(" ", 1)[1])], untyped
    # The generic envelope is the exception, not the rule.
    assert len(untyped) < len(_operations()) / 2, untyped


def test_the_error_envelope_is_documented() -> None:
    error = resolve({"$ref": "#/components/schemas/ErrorEnvelope"})
    assert error["properties"]["success"]["const"] is False
    assert set(error["required"]) == {"success", "error", "code", "timestamp"}
    assert {"hint", "details"} <= set(error["properties"])


GOOD: dict[str, Any] = {
    "success": True,
    "data": {"paused": True, "changed": False},
    "timestamp": "2025-01-31T12:00:00.000Z",
    "cached": False,
}
ERROR: dict[str, Any] = {
    "success": False,
    "error": "no run with id 'x'",
    "code": "RUN_NOT_FOUND",
    "timestamp": GOOD["timestamp"],
}

# (status, body) answers of `POST /api/queue/pause` that break what it documents.
WRONG: dict[str, tuple[int, Any]] = {
    "a field missing": (200, {**GOOD, "data": {"paused": True}}),
    "a field it does not document": (200, {**GOOD, "data": {**GOOD["data"], "extra": 1}}),
    "a field of the wrong type": (200, {**GOOD, "data": {"paused": "yes", "changed": False}}),
    "no envelope": (200, GOOD["data"]),
    "success false on a 200": (200, {**GOOD, "success": False}),
    "no cached": (200, {k: v for k, v in GOOD.items() if k != "cached"}),
    "FastAPI's own 422": (422, {"detail": [{"loc": ["body"], "msg": "x", "type": "y"}]}),
    "an error without code": (404, {k: v for k, v in ERROR.items() if k != "code"}),
    "an error with success true": (409, {**ERROR, "success": True}),
    "a lower-case code": (404, {**ERROR, "code": "not found"}),
}


def _answer(status: int, body: Any) -> httpx.Response:
    request = httpx.Request("POST", "http://test/api/queue/pause")
    response = httpx.Response(status, json=body, request=request)
    response.elapsed = timedelta(0)  # as if it came over the wire
    return response


@pytest.mark.parametrize("wrong", sorted(WRONG))
def test_a_wrong_answer_breaks_the_documented_schema(wrong: str) -> None:
    operation = schemathesis.openapi.from_dict(SCHEMA)["/api/queue/pause"]["POST"]
    assert operation.is_valid_response(_answer(200, GOOD))
    assert operation.is_valid_response(_answer(404, ERROR))
    status, body = WRONG[wrong]
    assert not operation.is_valid_response(_answer(status, body))


def test_every_body_model_is_strict() -> None:
    """Request bodies refuse unknown fields and coerce nothing (`"true"` is not true)."""

    def models(annotation: Any) -> list[type[BaseModel]]:
        found: list[type[BaseModel]] = []
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            found.append(annotation)
            for info in annotation.model_fields.values():
                found += models(info.annotation)
        for argument in getattr(annotation, "__args__", ()):
            found += models(argument)
        return found

    bodies = [
        model
        for route in api_routes(reference_app())
        for param in route.dependant.body_params
        for model in models(param.field_info.annotation)
    ]
    assert len({b.__name__ for b in bodies}) >= 25
    loose = {
        b.__qualname__
        for b in bodies
        if b.model_config.get("extra") != "forbid" or b.model_config.get("strict") is not True
    }
    assert not loose, f"request bodies without extra='forbid', strict=True: {sorted(loose)}"


# --- real answers ---------------------------------------------------------------------------

# Answers captured for later requests: operation → (id name, field of `data`).
CAPTURE = {
    "POST /api/queue/runs": ("queued_run", "id"),
    "POST /api/eval/runs": ("eval_run", "id"),
    "POST /api/system/queue/maintenance/run": ("maintenance_run", "id"),
}


def _validate_every_operation(url: str, token: str, ids: Ids) -> dict[str, tuple[int, Any]]:
    """Call every operation once with real ids and check its answer with schemathesis."""
    headers = {"Authorization": f"Bearer {token}"}
    served = schemathesis.openapi.from_url(f"{url}/openapi.json", headers=headers)
    documented = {label: (path, op) for label, path, op in operations()}
    creations = [label for label in documented if label in CAPTURE]
    answers: dict[str, tuple[int, Any]] = {}
    for label in creations + ordered([x for x in documented if x not in creations]):
        path, operation = documented[label]
        if path.endswith(NOT_JSON):
            continue
        sent = body(label, operation, ids)
        case = served[path][label.split(" ", 1)[0]].Case(
            path_parameters=path_ids(path, operation, ids),
            query=QUERIES.get(label, {}),
            **({"body": sent, "media_type": "application/json"} if sent is not None else {}),
        )
        response = case.call_and_validate(base_url=url, headers=headers, checks=CHECKS)
        is_json = response.headers.get("content-type", [""])[0].startswith("application/json")
        answers[label] = (response.status_code, response.json() if is_json else None)
        if label in CAPTURE and response.status_code < 300:
            name, field = CAPTURE[label]
            ids[name] = str(response.json()["data"][field])
    return answers


async def _seeded(live: Live) -> Seeded:
    account = await live.account("default", "admin")
    seeded = await seed_organisation(live, account, "contract")
    async with live.client(token=account.token) as client:
        # Another member, for the operations on a member (changing one's own role or
        # removing oneself would end this test's access).
        await client.post("/api/users", json={"email": "m@x.test", "role": "member"})
        members = (await client.get("/api/users")).json()["data"]["users"]
    seeded.ids["user"] = next(m["id"] for m in members if m["email"] == "m@x.test")
    seeded.ids.update(await shared_ids(live))
    return seeded


async def test_real_answers_match_what_every_operation_documents(
    live: Live, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VALUERANK_SECRET_KEY", generate_key())  # provider keys can be stored
    get_settings.cache_clear()
    try:
        await _check_every_operation(live)
    finally:
        get_settings.cache_clear()


async def _check_every_operation(live: Live) -> None:
    seeded = await _seeded(live)
    ids = dict(seeded.ids)
    answers = await asyncio.to_thread(
        _validate_every_operation, live.url, seeded.account.token, ids
    )
    expected = {f"{m} {p}" for m, p, _ in _operations() if not p.endswith(NOT_JSON)}
    assert set(answers) == expected
    failed = {
        label: answer
        for label, answer in answers.items()
        if _typed(label.split(" ", 1)[1]) and not 200 <= answer[0] < 300
    }
    assert not failed, f"typed operations that did not succeed: {failed}"
    succeeded = [label for label, (status, _) in answers.items() if status < 300]
    assert len(succeeded) >= 100, sorted(set(answers) - set(succeeded))
    analysis = answers["GET /api/runs/{run_id}/analysis"][1]
    assert set(analysis["debug"]) == {
        "query_time_ms",
        "analysis_time_ms",
        "cache_hit",
        "computed",
    }
    # A list answering `next_cursor` pages with `cursor`, or says it is one page.
    for label, (status, answer) in answers.items():
        data = answer.get("data") if isinstance(answer, dict) and status < 300 else None
        if not isinstance(data, dict) or "next_cursor" not in data:
            continue
        method, path = label.split(" ", 1)
        operation = SCHEMA["paths"][path][method.lower()]
        takes_cursor = any(p["name"] == "cursor" for p in operation.get("parameters", []))
        one_page = "Not paginated" in " ".join(operation.get("description", "").split())
        assert takes_cursor or (one_page and data["next_cursor"] is None), label
