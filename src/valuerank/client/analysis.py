"""Analyses, comparisons, experiments, lineage results and reports, asked of a server:
`valuerank analyze|compare|experiments|lineage|report` when VALUERANK_API_URL is set. Each
answers what the command prints locally (its `--json`), so the two paths share the printing."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any
from urllib.parse import urlencode

from valuerank.client.api import ApiClient, segment, with_query

# Computing a deep analysis or a comparison can take longer than a read: the server answers
# when it is done.
COMPUTE_TIMEOUT_SECONDS = 600.0
EXPERIMENTS_LIMIT = 500  # what `experiments list` shows locally (the API's largest page)


def _patient(client: ApiClient) -> ApiClient:
    return dataclasses.replace(client, timeout=max(client.timeout, COMPUTE_TIMEOUT_SECONDS))


def analyze(
    client: ApiClient,
    ref: str,
    *,
    deep: bool,
    force: bool,
    narrative_model: str | None,
    allow_unknown_model: bool,
    current_deep: bool,
) -> dict[str, Any]:
    """POST /api/runs/{ref}/analysis: `{success, cached, deep_cached, analysis, narrative?}`
    as `analyze --json` prints it, with `current_deep` (None unless asked for and stored)."""
    body: dict[str, Any] = {"deep": deep, "force": force, "current_deep": current_deep}
    if narrative_model is not None:
        body["narrative_model"] = narrative_model
        body["allow_unknown_models"] = allow_unknown_model
    data: dict[str, Any] = _patient(client).post(f"/api/runs/{segment(ref)}/analysis", body)
    return {"success": True, **data, "current_deep": data.get("current_deep")}


def compare(
    client: ApiClient, baseline: str, other: str, *, correction: str, force: bool
) -> dict[str, Any]:
    """POST /api/comparisons: `{success, cached, comparison}` as `compare --json` prints it."""
    body = {
        "baseline_run_id": baseline,
        "comparison_run_id": other,
        "correction": correction,
        "force": force,
    }
    data: dict[str, Any] = _patient(client).post("/api/comparisons", body)
    return {"success": True, **data}


def create_experiment(
    client: ApiClient, *, name: str, hypothesis: str, baseline: str
) -> dict[str, Any]:
    body = {"name": name, "hypothesis": hypothesis, "baseline_run_id": baseline}
    made: dict[str, Any] = client.post("/api/experiments", body)
    return made


def add_variant(
    client: ApiClient, experiment: str, changes: dict[str, Any], *, start: bool
) -> dict[str, Any]:
    path = f"/api/experiments/{segment(experiment)}/runs"
    made: dict[str, Any] = client.post(path, {"changes": changes, "start": start})
    return made


def experiment_report(client: ApiClient, experiment: str) -> dict[str, Any]:
    """GET /api/experiments/{id}: every variant compared with the baseline (computed there)."""
    report: dict[str, Any] = _patient(client).get(f"/api/experiments/{segment(experiment)}")
    return report


def list_experiments(client: ApiClient) -> list[dict[str, Any]]:
    """The organisation's newest experiments, as many as `experiments list` shows locally."""
    found: list[dict[str, Any]] = client.get(f"/api/experiments?limit={EXPERIMENTS_LIMIT}")[
        "experiments"
    ]
    return found


def lineage_results(
    client: ApiClient, definition: str, *, runs: list[str], exclude: list[str]
) -> dict[str, Any]:
    """GET /api/definitions/{id}/lineage/results with the chosen runs and left-out versions."""
    query = urlencode([("run", r) for r in runs] + [("exclude", e) for e in exclude])
    path = f"/api/definitions/{segment(definition)}/lineage/results"
    results: dict[str, Any] = _patient(client).get(f"{path}?{query}" if query else path)
    return results


@dataclasses.dataclass(frozen=True)
class Report:
    """A run's report as the server sent it: the HTML file's bytes and what it holds."""

    html: bytes
    file_name: str
    run_id: str
    baseline_run_id: str | None
    figures: dict[str, int]


def fetch_report(client: ApiClient, ref: str, *, baseline: str | None) -> Report:
    """GET /api/runs/{ref}/report: the HTML file (held in memory: a report is a few hundred
    KB) and, from its headers, its run, baseline, figures and file name."""
    query = with_query("", baseline=baseline)
    with _patient(client).download("GET", f"/api/runs/{segment(ref)}/report{query}") as answer:
        headers = answer.headers
        html: bytes = answer.read()
    named = re.search(r'filename="([^"/\\]+)"', headers.get("Content-Disposition", ""))
    run_id = headers.get("X-ValueRank-Run-Id", "")
    return Report(
        html=html,
        file_name=named.group(1) if named else f"report-{run_id[-8:]}.html",
        run_id=run_id,
        baseline_run_id=headers.get("X-ValueRank-Baseline-Run-Id") or None,
        figures=json.loads(headers.get("X-ValueRank-Figures") or "{}"),
    )
