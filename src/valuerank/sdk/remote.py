"""The Python API through a server: its JSON API with an API token, for the token's
organisation and role (`valuerank.client.ApiClient`, the standard library's HTTP)."""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlencode

from valuerank.client.api import ApiClient, ApiError, segment
from valuerank.formats.run_table import COLUMNS_HEADER
from valuerank.sdk.backend import Table

POLL_SECONDS = 0.5


class RemoteBackend:
    def __init__(self, url: str, token: str | None, timeout: float) -> None:
        self.api = ApiClient(url, token, timeout)
        self.api.url("/")  # INVALID_API_URL now, not at the first call

    def definitions(self, limit: int) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.api.get(f"/api/definitions?limit={int(limit)}")[
            "definitions"
        ]
        return found

    def definition(self, ref: str) -> dict[str, Any]:
        found: dict[str, Any] = self.api.get(f"/api/definitions/{segment(ref)}")
        return found

    def runs(self, limit: int) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.api.get(f"/api/runs?limit={int(limit)}")["runs"]
        return found

    def run(self, ref: str) -> dict[str, Any]:
        found: dict[str, Any] = self.api.get(f"/api/runs/{segment(ref)}")
        return found

    def table(self, run_id: str, *, with_text: bool) -> Table:
        query = urlencode({"format": "jsonl", "with_text": str(with_text).lower()})
        with self.api.download("POST", f"/api/export/table/{segment(run_id)}?{query}") as answer:
            columns = json.loads(answer.headers.get(COLUMNS_HEADER) or "[]")
            rows = [json.loads(line) for line in answer if line.strip()]
        return Table([str(c) for c in columns], rows)

    def analysis(self, run_id: str) -> dict[str, Any]:
        found: dict[str, Any] = self.api.get(f"/api/runs/{segment(run_id)}/analysis")
        return found

    def transcript(self, transcript_id: str) -> dict[str, Any]:
        found: dict[str, Any] = self.api.get(f"/api/transcripts/{segment(transcript_id)}")
        return found

    def compare(self, baseline: str, other: str, timeout: float) -> dict[str, Any]:
        """Queue the comparison on the server and wait (its workers compute it)."""
        queued = self.api.post(
            "/api/runs/compare", {"baseline_run_id": baseline, "comparison_run_id": other}
        )
        comparison_id = str(queued.get("comparison_id") or queued.get("id"))
        deadline = time.monotonic() + timeout
        while True:
            found: dict[str, Any] = self.api.get(f"/api/comparisons/{segment(comparison_id)}")
            if found.get("status") != "queued":
                return found
            if time.monotonic() > deadline:
                raise ApiError(
                    f"comparison {comparison_id} is still queued after {timeout:g} s",
                    code="TIMEOUT",
                    hint="is a worker running on the server? ask again with a longer timeout",
                )
            time.sleep(POLL_SECONDS)

    def close(self) -> None:
        """Nothing is held open between calls."""
