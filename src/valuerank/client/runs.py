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
