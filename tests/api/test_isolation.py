"""Organisations are isolated on every endpoint: an admin of one organisation who names
another organisation's resource — in the path or in the body — gets 404, exactly as for an
unknown id, and nothing is read or changed.

The operations come from the served /openapi.json, so a new route with an id in its path
fails here until it is covered (or exempted, with the reason). Request bodies are built from
the operation's own schema, with every `*_id` field naming the other organisation's resource.
"""

from __future__ import annotations

from typing import Any

import httpx

from valuerank.queue import JobSpec, enqueue
from valuerank.queue.outbox import enqueue_notifications, register_webhook

from .conftest import Live, MakeRun

# Path or body field → the kind of resource it names.
KINDS = {
    "run_id": "run",
    "baseline_run_id": "run",
    "comparison_run_id": "run",
    "definition_id": "definition",
    "other_id": "definition",  # GET /api/definitions/{definition_id}/diff/{other_id}
    "rubric_id": "rubric",
    "comparison_id": "comparison",
    "experiment_id": "experiment",
    "task_id": "task",
    "ra_tag_id": "tag",
    "user_id": "user",
    "token_id": "token",
    "transcript_id": "transcript",
    "outbox_id": "notification",
    "job_id": "job",
}

# Operations with an id in the path that name no organisation's resource, and why.
EXEMPT = {
    # A provider name, not an id: each organisation has its own key for it, and the
    # credentials tests check one organisation's PUT/DELETE never touches another's.
    "PUT /api/credentials/{provider}": "a provider name (per-organisation keys)",
    "DELETE /api/credentials/{provider}": "a provider name (per-organisation keys)",
    # The model registry and the providers' limits and pauses belong to the install (shared
    # by every organisation, as the queue's rate buckets are); their tests check the roles.
    "GET /api/models/{model_id}": "a model of the shared registry",
    "GET /api/providers/{provider}": "a provider of the shared queue",
    "PUT /api/providers/{provider}/limits": "a provider of the shared queue",
    "DELETE /api/providers/{provider}/limits": "a provider of the shared queue",
    "POST /api/providers/{provider}/pause": "a provider of the shared queue",
    "POST /api/providers/{provider}/resume": "a provider of the shared queue",
}

# Paths answering a stream that stays open while the resource lives.
STREAMS = ("/events/stream",)

# Operations without ids in the path whose body names other resources by id.
BODY_REFERENCES = {
    "POST /api/runs/compare",
    "POST /api/experiments",
    "POST /api/queue/runs",
    "POST /api/eval/runs",
    "POST /api/scenarios/expand",
}

MODELS = ("scripted:utilitarian", "scripted:contrarian")
DECISIONS = {"scripted:utilitarian": [1, 2, 5, 4], "scripted:contrarian": [5, 4, 1, 2]}


async def _other_organisation(live: Live, make_run: MakeRun) -> dict[str, str]:
    """Resources of organisation `other`, made through the API as its admin."""
    account = await live.account("other", "admin")
    ids = {"user": account.user_id}
    first = await make_run(account.org_id, models=MODELS, decisions=DECISIONS)
    second = await make_run(account.org_id, models=MODELS, decisions=DECISIONS)
    ids["run"], ids["definition"] = first.id, str(first.definition_id)
    async with live.db.transaction() as conn:  # webhooks are registered by the CLI only
        await register_webhook(conn, account.org_id, "http://127.0.0.1:9/hook")
        [ids["notification"]] = await enqueue_notifications(
            conn, account.org_id, "task_failed", {"t": 1}
        )
        job = JobSpec(kind="fail", org_id=account.org_id, partition="theirs")
        ids["job"] = (await enqueue(conn, job)).job_id
    async with live.client(token=account.token) as other:
        tokens = (await other.get("/api/tokens")).json()["data"]["tokens"]
        ids["token"] = tokens[0]["id"]
        listed = (await other.get("/api/transcripts")).json()["data"]["transcripts"]
        ids["transcript"] = listed[0]["id"]
        made = await other.post(
            "/api/runs/compare",
            json={"baseline_run_id": first.id, "comparison_run_id": second.id},
        )
        ids["comparison"] = made.json()["data"]["comparison_id"]
        made = await other.post(
            "/api/experiments", json={"name": "theirs", "baseline_run_id": first.id}
        )
        ids["experiment"] = made.json()["data"]["id"]
        made = await other.post(
            "/api/rubrics",
            json={"name": "theirs", "yaml": "values:\n  Care:\n    definition: Caring.\n"},
        )
        ids["rubric"] = made.json()["data"]["id"]
        made = await other.post("/api/assumptions/tasks", json={"name": "their task"})
        ids["task"] = str(made.json()["data"]["id"])
        made = await other.post(
            f"/api/assumptions/tasks/{ids['task']}/tags",
            json={"text": "#COMPLETION_DRIVE_IMPL: their assumption"},
        )
        ids["tag"] = made.json()["data"]["id"]
    assert all(ids.values()), ids
    return ids


def _resolve(spec: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in spec:
        node: Any = root
        for part in spec["$ref"].removeprefix("#/").split("/"):
            node = node[part]
        spec = node
    return spec


def _value(name: str, spec: dict[str, Any], root: dict[str, Any], ids: dict[str, str]) -> Any:
    """A valid value of `spec`; a field named like an id names the other organisation's."""
    spec = _resolve(spec, root)
    if name in KINDS:
        return ids[KINDS[name]]
    for option in spec.get("anyOf", []):
        if option.get("type") != "null":
            return _value(name, option, root, ids)
    if "enum" in spec:
        return spec["enum"][0]
    kind = spec.get("type")
    if kind == "object":
        return {
            field: _value(field, spec["properties"][field], root, ids)
            for field in spec.get("required", [])
        }
    if kind == "array":
        count = spec.get("minItems", 0)
        return [_value(name, spec.get("items", {}), root, ids) for _ in range(count)]
    if kind in ("integer", "number"):
        return spec.get("minimum", 1)
    if kind == "boolean":
        return False
    if name == "models":
        return "scripted:utilitarian"
    return "x" * max(1, spec.get("minLength", 1))


def _operations(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method.upper(), path, operation)
        for path, item in schema["paths"].items()
        for method, operation in item.items()
        if method in ("get", "post", "put", "patch", "delete")
    ]


def _body(operation: dict[str, Any], root: dict[str, Any], ids: dict[str, str]) -> Any:
    content = operation.get("requestBody", {}).get("content", {})
    if "application/json" not in content:
        return None
    return _value("", content["application/json"]["schema"], root, ids)


async def test_another_organisations_ids_answer_404_on_every_endpoint(
    live: Live, make_run: MakeRun
) -> None:
    ids = await _other_organisation(live, make_run)
    async with live.client() as client:
        schema = (await client.get("/openapi.json")).json()
        checked: list[str] = []
        uncovered: list[str] = []
        for method, path, operation in _operations(schema):
            label = f"{method} {path}"
            params = [p["name"] for p in operation.get("parameters", []) if p["in"] == "path"]
            if label in EXEMPT or (not params and label not in BODY_REFERENCES):
                continue
            if any(p not in KINDS for p in params):
                uncovered.append(label)
                continue
            url = path.format(**{p: ids[KINDS[p]] for p in params})
            body = _body(operation, schema, ids)
            response = await client.request(method, url, json=body)
            _assert_not_found(label, response)
            checked.append(label)
    assert not uncovered, f"routes with ids this test does not know: {uncovered}"
    assert len(checked) >= 20, checked


def _assert_not_found(label: str, response: httpx.Response) -> None:
    assert response.status_code == 404, f"{label}: {response.status_code} {response.text}"
    body = response.json()
    assert body["success"] is False and body["code"].endswith("NOT_FOUND"), (label, body)


async def test_the_same_requests_with_own_ids_are_not_404(live: Live, make_run: MakeRun) -> None:
    """The 404s above come from isolation, not from malformed requests: the admin of the
    organisation that owns the resources gets past the lookup on the same requests."""
    ids = await _other_organisation(live, make_run)
    account = await live.account("other", "admin")
    async with live.client(token=account.token) as owner:
        schema = (await owner.get("/openapi.json")).json()
        for method, path, operation in _operations(schema):
            label = f"{method} {path}"
            params = [p["name"] for p in operation.get("parameters", []) if p["in"] == "path"]
            if method == "DELETE" or label in EXEMPT or not params or path.endswith(STREAMS):
                continue  # deleting would spoil the next requests; a stream never ends
            if any(p not in KINDS for p in params):
                continue
            url = path.format(**{p: ids[KINDS[p]] for p in params})
            response = await owner.request(method, url, json=_body(operation, schema, ids))
            assert response.status_code != 404, f"{label}: {response.text}"
