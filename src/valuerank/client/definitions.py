"""Definitions, scenarios and rubrics, asked of a server: `valuerank definitions …`,
`scenarios expand` and `rubrics …` when VALUERANK_API_URL is set. Each answer has the shape
the command prints from the database (the routes answer with the same `summary()`,
`detail()` and `to_dict()` the local path prints)."""

from __future__ import annotations

from typing import Any

from valuerank.client.api import ApiClient, segment, with_query


def every_page(client: ApiClient, path: str, key: str) -> list[dict[str, Any]]:
    """Every item of a paginated newest-first list, oldest first, as the CLI lists them
    from the database."""
    items: list[dict[str, Any]] = client.items(path, key)
    return items[::-1]


def import_definition(
    client: ApiClient, text: str, *, filename: str, label: str | None
) -> dict[str, Any]:
    """POST /api/definitions/import: the stored version's detail and `created` (False: the
    same content was there)."""
    path = with_query("/api/definitions/import", filename=filename, label=label)
    data: dict[str, Any] = client.upload(path, text.encode("utf-8"), "text/markdown")
    return data


def definition(client: ApiClient, ref: str, what: str = "") -> dict[str, Any]:
    """GET /api/definitions/{ref}[/lineage|/tree]: a version's detail, lineage or tree."""
    data: dict[str, Any] = client.get(f"/api/definitions/{segment(ref)}{what}")
    return data


def fork_definition(
    client: ApiClient,
    ref: str,
    *,
    label: str | None,
    markdown: str | None,
    source_file: str | None,
) -> dict[str, Any]:
    """POST /api/definitions/{ref}/fork: the child's detail (a copy without `markdown`)."""
    body = {"label": label, "markdown": markdown, "source_file": source_file}
    data: dict[str, Any] = client.post(
        f"/api/definitions/{segment(ref)}/fork", {k: v for k, v in body.items() if v is not None}
    )
    return data


def diff(client: ApiClient, a: str, b: str) -> dict[str, Any]:
    """GET /api/definitions/{a}/diff/{b}: both versions' summaries and what changed."""
    data: dict[str, Any] = client.get(f"/api/definitions/{segment(a)}/diff/{segment(b)}")
    return data


def export_markdown(client: ApiClient, ref: str) -> str:
    """POST /api/export/definition/{ref}: the version as the CLI's `.md` text."""
    with client.download("POST", f"/api/export/definition/{segment(ref)}") as answer:
        data: bytes = answer.read()
    return data.decode("utf-8")


def expand(client: ApiClient, body: dict[str, Any]) -> dict[str, Any]:
    """POST /api/scenarios/expand: totals, sample seed, scenario ids and the YAML file."""
    data: dict[str, Any] = client.post(
        "/api/scenarios/expand", {k: v for k, v in body.items() if v is not None}
    )
    return data


def import_rubric(client: ApiClient, text: str, *, name: str, filename: str) -> dict[str, Any]:
    """POST /api/rubrics/import: the stored version (summary, values, content, created)."""
    path = with_query("/api/rubrics/import", name=name, filename=filename)
    data: dict[str, Any] = client.upload(path, text.encode("utf-8"), "application/yaml")
    return data


def rubric(client: ApiClient, ref: str) -> dict[str, Any]:
    """GET /api/rubrics/{ref}: a rubric version with its values and content."""
    data: dict[str, Any] = client.get(f"/api/rubrics/{segment(ref)}")
    return data
