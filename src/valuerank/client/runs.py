"""Runs, asked of a server: `valuerank runs status` when VALUERANK_API_URL is set."""

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


def print_status_from(client: ApiClient, ref: str, *, as_json: bool) -> int:
    """Print the run's status as the server reports it; the exit code (1: an error, shown)."""
    try:
        data = run_status(client, ref)
    except ApiError as exc:
        show_error(exc.message, code=exc.code, as_json=as_json, hint=exc.hint)
        return 1
    print_run_status(data, as_json=as_json)
    return 0
