"""Runs, asked of a server: `valuerank runs list|status|results` when VALUERANK_API_URL is
set."""

from __future__ import annotations

from typing import Any

from valuerank.client.api import ApiClient, ApiError, segment
from valuerank.terminal import print_run_status, show_error


def run_status(client: ApiClient, ref: str) -> dict[str, Any]:
    """GET /api/runs/{ref}: the run's report (what `runs status --json` prints from the
    database: id, status, progress, judging, cost, ETA, error, results per model) and more
    (dates, priority, sampling, judges, the actions it allows)."""
    data: dict[str, Any] = client.get(f"/api/runs/{segment(ref)}")
    return data


def list_runs(client: ApiClient, *, limit: int = 100) -> list[dict[str, Any]]:
    """GET /api/runs: the organisation's `limit` newest runs (what `runs list --json` prints
    from the database, with each run's progress and dates)."""
    runs: list[dict[str, Any]] = client.get(f"/api/runs?limit={int(limit)}")["runs"]
    return runs


def print_status_from(client: ApiClient, ref: str, *, as_json: bool) -> int:
    """Print the run's status as the server reports it; the exit code (1: an error, shown)."""
    try:
        data = run_status(client, ref)
    except ApiError as exc:
        show_error(exc.message, code=exc.code, as_json=as_json, hint=exc.hint)
        return 1
    print_run_status(data, as_json=as_json)
    return 0


def create_run(client: ApiClient, settings: dict[str, Any]) -> dict[str, Any]:
    """POST /api/queue/runs: create a run with `runs create`'s settings (the API's body:
    definition_id, models, judges, sampling, priority, start…) and, unless `start` is
    false, start it. What `runs create --json` prints: scenarios, jobs, cost estimate."""
    data: dict[str, Any] = client.post("/api/queue/runs", settings)
    return data


def steer_run(client: ApiClient, ref: str, action: str) -> dict[str, Any]:
    """POST /api/queue/runs/{ref}/{action} (pause, resume or cancel): the run's summary."""
    data: dict[str, Any] = client.post(f"/api/queue/runs/{segment(ref)}/{segment(action)}")
    return data


def rename_run(client: ApiClient, ref: str, name: str) -> dict[str, Any]:
    """PATCH /api/runs/{ref} with the new name: the run's summary."""
    data: dict[str, Any] = client.patch(f"/api/runs/{segment(ref)}", {"name": name})
    return data


def delete_run(client: ApiClient, ref: str) -> dict[str, Any]:
    """DELETE /api/queue/runs/{ref}: `{"id", "deleted"}`. The API deletes only a run not
    under way (pending or ended): a running or paused one is 409 RUN_ACTIVE."""
    data: dict[str, Any] = client.delete(f"/api/queue/runs/{segment(ref)}")
    return data


def enqueue_run(client: ApiClient, ref: str) -> dict[str, Any]:
    """POST /api/eval/runs/{ref}/start: the run's summary with `enqueued` (true when this
    call put jobs on the queue) and `jobs_enqueued`."""
    data: dict[str, Any] = client.post(f"/api/eval/runs/{segment(ref)}/start")
    return data


def rerun_failed(client: ApiClient, ref: str) -> dict[str, Any]:
    """POST /api/runs/{ref}/rerun-failed: the run's summary with `requeued`."""
    data: dict[str, Any] = client.post(f"/api/runs/{segment(ref)}/rerun-failed")
    return data


def expand_run(client: ApiClient, ref: str, sample_percentage: float) -> dict[str, Any]:
    """POST /api/runs/{ref}/expand: the run's summary with `scenarios_added`."""
    body = {"sample_percentage": float(sample_percentage)}
    data: dict[str, Any] = client.post(f"/api/runs/{segment(ref)}/expand", body)
    return data


def judge_run(
    client: ApiClient, ref: str, judges: list[str], *, replace: bool, allow_unknown: bool
) -> dict[str, Any]:
    """POST /api/runs/{ref}/judge: what `runs judge --json` prints (the run's judges now,
    those added and removed, the judge jobs enqueued)."""
    body = {"judges": list(judges), "replace": replace, "allow_unknown_models": allow_unknown}
    data: dict[str, Any] = client.post(f"/api/runs/{segment(ref)}/judge", body)
    return data
