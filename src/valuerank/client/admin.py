"""The install's administration asked of a server (`valuerank models|queue …` with
VALUERANK_API_URL set): each function answers what the command's local path gives, in the
same shape, so one rendering serves both."""

from __future__ import annotations

from typing import Any

from valuerank.client.api import ApiClient, ApiError, segment, with_query

# What the local command says when no cap or several are named (queue/cap_controls.py).
CAP_SCOPE_HINT = "name one of: --global, --org ORG, --provider PROVIDER, --model PROVIDER:MODEL"


def _flag(value: bool) -> str:
    return "true" if value else "false"


# -- models ----------------------------------------------------------------------------------


def list_models(
    client: ApiClient, *, provider: str | None, include_inactive: bool
) -> list[dict[str, Any]]:
    """GET /api/models, every page: the registry as `models list --json` prints it."""
    return client.items(
        "/api/models",
        "models",
        provider=provider,
        include_inactive=_flag(include_inactive),
    )


def model_path(model_id: str) -> str:
    return f"/api/models/{segment(model_id)}"


def send_changes(client: ApiClient, model_id: str, changes: dict[str, Any], *, new: bool) -> Any:
    """PUT (`models add`: register or change) or PATCH (`models set`) the changed fields."""
    if new:
        return client.put(model_path(model_id), changes)
    return client.patch(model_path(model_id), changes)


# -- the queue -------------------------------------------------------------------------------


def queue_status(client: ApiClient, *, all_orgs: bool) -> dict[str, Any]:
    """`queue status --json`: the organisation's, or (`all_orgs`, an install admin) every
    organisation's."""
    path = "/api/system/queue/status" if all_orgs else "/api/queue/status"
    data: dict[str, Any] = client.get(path)
    return data


def toggle(client: ApiClient, *, paused: bool, provider: str | None) -> bool:
    """Pause or resume the whole queue (as the local command does, not one organisation's)
    or one provider: whether it changed."""
    verb = "pause" if paused else "resume"
    if provider is None:
        path = f"/api/system/queue/{verb}"
    else:
        path = f"/api/providers/{segment(provider)}/{verb}"
    return bool(client.post(path)["changed"])


def retry_failed(client: ApiClient, *, job: str | None, partition: str | None) -> list[str]:
    """The ids of the failed jobs sent back to the queue: one job, or a partition's."""
    if job is not None:
        client.post(f"/api/queue/jobs/{segment(job)}/retry")
        return [job]
    ids: list[str] = client.post("/api/queue/jobs/retry-failed", {"partition": partition})[
        "job_ids"
    ]
    return ids


# -- rate limits and caps --------------------------------------------------------------------


def list_limits(client: ApiClient) -> list[dict[str, Any]]:
    """Every rate-limit bucket (`queue limits list --json`), in the local order (by key)."""
    providers = client.items("/api/providers", "providers")
    rows = [row for view in providers for row in view["limits"]]
    return sorted(rows, key=lambda row: row["key"])


def set_limits(client: ApiClient, provider: str, body: dict[str, Any]) -> dict[str, Any]:
    """PUT the provider's (or `body["model"]`'s) limits; a negative one is INVALID_INPUT as
    locally (the route's schema would call it a VALIDATION_ERROR of its body)."""
    for name in ("rpm", "tpm", "min_interval_ms", "concurrency"):
        if body.get(name) is not None and body[name] < 0:
            raise ApiError(
                f"{name} cannot be negative", code="INVALID_INPUT", hint="0 or unset: no limit"
            )
    data: dict[str, Any] = client.put(f"/api/providers/{segment(provider)}/limits", body)
    return data


def remove_limits(client: ApiClient, provider: str, model: str) -> dict[str, Any]:
    query = with_query("", model=model or None)
    data: dict[str, Any] = client.delete(f"/api/providers/{segment(provider)}/limits{query}")
    return data


def cap_path(*, everything: bool, org: str | None, provider: str | None, model: str | None) -> str:
    """The route of the one cap named (INVALID_INPUT, as locally, for none or several)."""
    named = [everything, org is not None, provider is not None or model is not None]
    if sum(named) != 1:
        raise ApiError("name exactly one cap", code="INVALID_INPUT", hint=CAP_SCOPE_HINT)
    if everything:
        return "/api/queue/caps/global"
    if org is not None:
        return f"/api/queue/caps/orgs/{segment(org)}"
    if provider is None:
        provider = model.split(":", 1)[0] if model and ":" in model else None
        if not provider:
            raise ApiError(
                f"which provider serves {model!r}?", code="INVALID_INPUT", hint=CAP_SCOPE_HINT
            )
    query = with_query("", model=model or None)
    return f"/api/queue/caps/providers/{segment(provider)}{query}"
