"""Every operation of /openapi.json as a request a test can send: which ids it takes (in the
path, the body or the query) and what kind of resource each names, with the body and query
a real request needs. Used by the contract test (an organisation's own ids) and the isolation
test (another organisation's ids).

`ids` maps a kind (`run`, `definition`, `task`…, see seeding.py) to an id.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from valuerank.api.reference import api_routes, reference_app

from .conftest import DEMO
from .seeding import MODELS, RUBRIC

APP = reference_app()
SCHEMA: dict[str, Any] = APP.openapi()
METHODS = ("get", "post", "put", "patch", "delete")
Ids = dict[str, str]
Operation = dict[str, Any]

# Path parameter → the kind of resource it names.
PARAMS = {
    "run_id": "run",
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
    "scenario_id": "scenario",  # a scenario of the run in the same path
    "outbox_id": "notification",
    "webhook_id": "webhook",
    "job_id": "failed_job",
    "invitation_id": "invitation",  # one the organisation sent
    "org": "org",  # /api/queue/caps/orgs/{org}: install-wide, B's admin is refused (403)
    # Not an organisation's: the registry and the providers are the install's.
    "model_id": "validator",
    "provider": "provider",
}
SHARED_PARAMS = {
    "model_id": "a model of the registry, shared by every organisation",
    "scenario_id": "a scenario id is the definition's content (the same in every organisation "
    "that imported the definition); the run beside it in the path is the organisation's",
    "provider": "a provider name: the queue's limits and pauses are the install's, and each "
    "organisation has its own key for it (one organisation's PUT/DELETE of a key never "
    "touches another's: the isolation test checks it)",
}
# Request-body fields that name a resource, and the kind they name.
BODY_REFS = {
    "definition_id": "definition",
    "baseline_run_id": "run",
    "comparison_run_id": "second_run",
    "user_id": "user",
    "org": "org",
}
# Body fields named like ids that name no organisation's resource.
BODY_NOT_REFS = {
    "id": "the id a new RA tag takes (unique within its task)",
    "request_id": "a validation round's name, chosen by the client",
    "validator_id": "a model of the registry, shared by every organisation",
    "base_id": "the base of the scenario ids a definition expands to (content, not a reference)",
}
# Query parameters that name a resource, and the kind they name.
QUERY_REFS = {
    "run": "run",
    "compare": "run",
    "baseline": "run",  # the run a report compares with
    "id": "failed_job",  # GET /api/assumptions/jobs: the jobs a validation queued
    "definition": "definition",
    "exclude": "definition",  # a version lineage results leave out
    "user_id": "user",
    "webhook_id": "webhook",
}
QUERY_NOT_REFS = frozenset(
    {
        "after", "agreement", "basis", "created_since", "created_until", "cursor", "debug",
        "decision", "deep", "disagreement", "event_type", "filename", "format",
        "include_inactive", "kind", "label", "limit", "mode", "model", "name", "preamble",
        "provider", "q",
        "sample_percentage", "sample_seed", "sample_size", "scenario", "seed", "show",
        "snapshots", "sort", "status", "threshold", "tolerance", "window_hours", "with_ancestry",
        "with_text",
    }
)  # fmt: skip

# Operations (by path prefix) whose path parameter must name another resource than PARAMS
# says for the request to succeed (a run in another state, a provider one can store a key of).
PATH_IDS = {
    "/api/queue/runs/{run_id}": ("run_id", "queued_run"),
    "/api/eval/runs/{run_id}": ("run_id", "eval_run"),
    "/api/runs/{run_id}/expand": ("run_id", "variant_run"),
    "/api/runs/{run_id}/rerun-failed": ("run_id", "variant_run"),
    "/api/runs/{run_id}/judge": ("run_id", "ended_run"),
    "/api/system/queue/maintenance/runs/{run_id}": ("run_id", "maintenance_run"),
    "/api/system/notifications/outbox/{outbox_id}/retry": ("outbox_id", "dead_notification"),
    "/api/credentials/{provider}": ("provider", "credential_provider"),
    # The caller answers invitations they received, not those their organisation sent.
    "/api/invitations/{invitation_id}": ("invitation_id", "received_invitation"),
}
# Upload operations: the file sent, and its name.
UPLOADS = {
    "POST /api/definitions/import": (DEMO.read_bytes(), DEMO.name),
    "POST /api/rubrics/import": (RUBRIC.encode(), "values_rubric.yaml"),
    "POST /api/import": (DEMO.read_bytes(), DEMO.name),
}
# Bodies a real request needs (the rest get the smallest body their schema allows).
BODIES: dict[str, Callable[[Ids], Any]] = {
    "POST /api/queue/runs": lambda ids: {"definition_id": ids["definition"], "models": [MODELS[0]]},
    "POST /api/eval/runs": lambda ids: {"definition_id": ids["definition"], "models": [MODELS[0]]},
    "POST /api/runs/{run_id}/expand": lambda ids: {"sample_percentage": 50.0},
    "POST /api/runs/{run_id}/judge": lambda ids: {"judges": ["scripted:centrist"]},
    "POST /api/runs/compare": lambda ids: {
        "baseline_run_id": ids["run"],
        "comparison_run_id": ids["second_run"],
    },
    "POST /api/comparisons": lambda ids: {
        "baseline_run_id": ids["run"],
        "comparison_run_id": ids["second_run"],
    },
    "POST /api/runs/{run_id}/analysis": lambda ids: {"current_deep": True},
    "POST /api/experiments": lambda ids: {"name": "again", "baseline_run_id": ids["run"]},
    "POST /api/experiments/{experiment_id}/runs": lambda ids: {"changes": {"temperature": 1.0}},
    "POST /api/runs/{run_id}/analyze": lambda ids: {"deep": True},
    "POST /api/assumptions/tasks": lambda ids: {"name": "another task"},
    "POST /api/assumptions/tasks/{task_id}/tags": lambda ids: {
        "text": "#COMPLETION_DRIVE_IMPL: another assumption"
    },
    "POST /api/assumptions/tasks/{task_id}/tags/{ra_tag_id}/validations": lambda ids: {
        "validator_id": ids["validator"],
        "outcome": "partial",
        "confidence": 55,
    },
    "POST /api/assumptions/tasks/{task_id}/tags/{ra_tag_id}/validate": lambda ids: {
        "models": [ids["validator"]]
    },
    "POST /api/definitions": lambda ids: {"markdown": DEMO.read_text(), "label": "copy"},
    "POST /api/rubrics": lambda ids: {"name": "another rubric", "yaml": RUBRIC},
    "POST /api/scenarios/expand": lambda ids: {"definition_id": ids["definition"]},
    "POST /api/models/check": lambda ids: {"models": [ids["validator"]]},
    "PATCH /api/models/{model_id}": lambda ids: {"active": True},
    "POST /api/webhooks": lambda ids: {"url": "https://93.184.216.34/hook"},
    "PATCH /api/webhooks/{webhook_id}": lambda ids: {"active": True},
    "POST /api/users": lambda ids: {"email": "new@x.test", "role": "viewer"},
    "PATCH /api/users/{user_id}": lambda ids: {"role": "admin"},
    "POST /api/tokens": lambda ids: {"name": "another", "user_id": ids["user"]},
    # A cap to remove (the smallest body, 0, lifts it): the DELETEs, sent last, find one.
    "PUT /api/queue/caps/global": lambda ids: {"max": 5},
    "PUT /api/queue/caps/orgs/{org}": lambda ids: {"max": 5},
    "PUT /api/queue/caps/providers/{provider}": lambda ids: {"max": 5},
}
QUERIES: dict[str, dict[str, Any]] = {
    "GET /api/runs/{run_id}/analysis": {"debug": "true"},
    "GET /api/assumptions/consensus/{task_id}": {"debug": "true"},
}
# Operations that would spoil the ones after them: sent last, in this order.
LAST = ("DELETE", "POST /api/auth/logout", "DELETE /api/users/{user_id}")


def operations() -> Iterator[tuple[str, str, Operation]]:
    """(label, path, operation) of every operation, as `METHOD /path`."""
    for path, item in SCHEMA["paths"].items():
        for method, operation in item.items():
            if method in METHODS:
                yield f"{method.upper()} {path}", path, operation


def websocket_paths() -> list[str]:
    return [r.path for r in api_routes(APP) if r.__class__.__name__ == "APIWebSocketRoute"]


def ordered(labels: list[str]) -> list[str]:
    """Operations in the schema's order, those of `LAST` at the end (in its order)."""

    def rank(label: str) -> int:
        found = [i for i, prefix in enumerate(LAST) if label.startswith(prefix)]
        return 1 + max(found) if found else 0

    return sorted(labels, key=rank)


def resolve(node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = SCHEMA["components"]["schemas"][node["$ref"].rsplit("/", 1)[-1]]
    return node


def params(operation: Operation, where: str) -> list[str]:
    return [p["name"] for p in operation.get("parameters", []) if p["in"] == where]


def json_body_schema(operation: Operation) -> dict[str, Any] | None:
    content = operation.get("requestBody", {}).get("content", {})
    schema: dict[str, Any] | None = content.get("application/json", {}).get("schema")
    return schema


def body_fields(spec: dict[str, Any] | None) -> set[str]:
    """Every property name of a body schema, nested ones too."""
    found: set[str] = set()
    pending = [spec] if spec else []
    while pending:
        node = resolve(pending.pop())
        pending += node.get("anyOf", []) + ([node["items"]] if "items" in node else [])
        for name, child in node.get("properties", {}).items():
            found.add(name)
            pending.append(child)
    return found


def path_ids(path: str, operation: Operation, ids: Ids) -> dict[str, str]:
    found = [ids[PARAMS[name]] for name in params(operation, "path")]
    named = dict(zip(params(operation, "path"), found, strict=True))
    for prefix, (name, kind) in PATH_IDS.items():
        if path.startswith(prefix):
            named[name] = ids[kind]
    return named


def smallest(spec: dict[str, Any], ids: Ids, name: str = "") -> Any:
    """The smallest valid value of `spec`; a field naming a resource names `ids`'."""
    if name in BODY_REFS and BODY_REFS[name] in ids:
        return ids[BODY_REFS[name]]
    spec = resolve(spec)
    for option in spec.get("anyOf", []):
        if option.get("type") != "null":
            return smallest(option, ids, name)
    if "enum" in spec:
        return spec["enum"][0]
    kind = spec.get("type")
    if kind == "object":
        required = spec.get("required", [])
        return {field: smallest(spec["properties"][field], ids, field) for field in required}
    if kind == "array":
        return [smallest(spec.get("items", {}), ids) for _ in range(spec.get("minItems", 0))]
    if kind in ("integer", "number"):
        return spec.get("minimum", 1)
    if kind == "boolean":
        return False
    return "x" * max(1, spec.get("minLength", 1))


def body(label: str, operation: Operation, ids: Ids) -> Any:
    """The JSON body of a real request (None: the operation takes none, or not JSON)."""
    if label in BODIES:
        return BODIES[label](ids)
    schema = json_body_schema(operation)
    return None if schema is None else smallest(schema, ids)
