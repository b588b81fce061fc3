"""Multi-model validation, asked of a server (/api/assumptions): `valuerank validation …`
when VALUERANK_API_URL is set. Each function answers what the command prints locally (its
`--json`), so the two paths share the printing."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlencode

from valuerank.client.api import ApiClient, segment

POLL_SECONDS = 0.25
DONE = ("succeeded", "failed", "cancelled")  # a job's ends (valuerank.queue.JobStatus)


def _task(task: str) -> str:
    return f"/api/assumptions/tasks/{segment(task.strip())}"


def create_task(client: ApiClient, name: str, description: str) -> dict[str, Any]:
    made: dict[str, Any] = client.post(
        "/api/assumptions/tasks", {"name": name, "description": description}
    )
    return made


def list_tasks(client: ApiClient, *, limit: int) -> list[dict[str, Any]]:
    tasks: list[dict[str, Any]] = client.get(f"/api/assumptions/tasks?limit={int(limit)}")["tasks"]
    return tasks


def add_tag(client: ApiClient, task: str, text: str, tag_id: str | None) -> dict[str, Any]:
    """The tag and `created` (the server answers 201 for a new tag, 200 for one it had)."""
    body: dict[str, Any] = {"text": text}
    if tag_id is not None:
        body["id"] = tag_id
    tag, created = client.created(f"{_task(task)}/tags", body)
    return {**tag, "created": created}


def list_tags(client: ApiClient, task: str) -> list[dict[str, Any]]:
    """Every tag of the task, in the order they were added (page after page)."""
    tags: list[dict[str, Any]] = client.items(f"{_task(task)}/tags", "tags")
    return tags


def record(
    client: ApiClient,
    task: str,
    tag: str,
    *,
    validator: str,
    outcome: str,
    confidence: float,
    notes: str,
) -> dict[str, Any]:
    """`{validation, consensus}`: the validation recorded and the tag's new consensus."""
    body = {
        "validator_id": validator,
        "outcome": outcome,
        "confidence": confidence,
        "notes": notes,
    }
    done: dict[str, Any] = client.post(f"{_task(task)}/tags/{segment(tag)}/validations", body)
    return done


def view(client: ApiClient, task: str, tag: str) -> dict[str, Any]:
    """Every model's current validation of the tag, with their consensus."""
    data: dict[str, Any] = client.get(
        f"/api/assumptions/multi-model/{segment(task.strip())}/{segment(tag)}"
    )
    return data


def consensus(client: ApiClient, task: str) -> dict[str, Any]:
    data: dict[str, Any] = client.get(f"/api/assumptions/consensus/{segment(task.strip())}")
    return data


def validate(
    client: ApiClient,
    task: str,
    tag: str,
    models: list[str],
    *,
    request_id: str | None,
    wait: bool,
    timeout: float,
) -> dict[str, Any]:
    """Ask the models (one queued job each, run by the server's workers); with `wait`, the
    jobs' ends (`results`, as the local command reports them) and then the tag's `view`."""
    body: dict[str, Any] = {"models": models}
    if request_id is not None:
        body["request_id"] = request_id
    asked: dict[str, Any] = client.post(f"{_task(task)}/tags/{segment(tag)}/validate", body)
    if not wait:
        return asked
    ids = [job["job_id"] for job in asked["jobs"]]
    asked["results"] = wait_for_jobs(client, ids, timeout)
    asked["view"] = view(client, task, tag)
    return asked


def wait_for_jobs(client: ApiClient, ids: list[str], timeout: float) -> dict[str, Any]:
    """The jobs' states once all have ended, or as they are when `timeout` seconds passed."""
    deadline = time.monotonic() + timeout
    query = urlencode([("id", job_id) for job_id in ids])
    while True:
        jobs: dict[str, Any] = client.get(f"/api/assumptions/jobs?{query}")["jobs"]
        if all(j["status"] in DONE for j in jobs.values()) or time.monotonic() >= deadline:
            return {job_id: jobs[job_id] for job_id in ids if job_id in jobs}
        time.sleep(POLL_SECONDS)
