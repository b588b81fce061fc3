"""Definition pages: the list (with import), one version (content, runs, the version tree as
an SVG graph), the editor (form fields or raw markdown; saving forks through the API, errors
shown at their line) and the side-by-side diff of any two versions.

Reads call the definitions service the API and CLI call; writes happen in the page's
JavaScript through `/api/definitions…` (static/research.js)."""

from __future__ import annotations

from collections import defaultdict
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response
from markupsafe import Markup

from valuerank.api.deps import Viewer
from valuerank.definitions import service
from valuerank.definitions.diff_summary import summarize_diff
from valuerank.findings.lineage import lineage_runs
from valuerank.versioning import TreeNode
from valuerank.web.sidebyside import side_by_side
from valuerank.web.svg_charts import TreeRun, version_tree_svg
from valuerank.web.templating import templates

router = APIRouter(include_in_schema=False)


def _flatten(node: TreeNode) -> list[TreeNode]:
    return [node, *(n for child in node.children for n in _flatten(child))]


@router.get("/definitions", response_class=HTMLResponse)
async def definitions_page(request: Request, ctx: Viewer) -> Response:
    async with ctx.db.transaction() as conn:
        stored = await service.list_definitions(conn, ctx.org_id)
    return templates.TemplateResponse(request, "definitions.html", {"definitions": stored})


@router.get("/definitions/new", response_class=HTMLResponse)
async def new_definition_page(request: Request, ctx: Viewer) -> Response:
    return templates.TemplateResponse(
        request, "definitions_edit.html", {"stored": None, "markdown": "", "tree": []}
    )


async def _with_tree(ctx: Viewer, definition_id: str) -> dict[str, Any]:
    async with ctx.db.transaction() as conn:
        stored = await service.get_definition(conn, ctx.org_id, definition_id)
        root = await service.tree(conn, ctx.org_id, stored.version.id)
        rows = await lineage_runs(conn, ctx.org_id, root.version.id)
        markdown = await service.export_markdown(conn, ctx.org_id, stored.version.id)
    runs: dict[str, list[TreeRun]] = defaultdict(list)
    for row in rows:
        if row.run_id is not None:
            runs[row.definition_id].append(TreeRun(row.run_id, row.run_status or "unknown"))
    return {"stored": stored, "root": root, "runs": runs, "markdown": markdown}


@router.get("/definitions/{definition_id}", response_class=HTMLResponse)
async def definition_page(request: Request, definition_id: str, ctx: Viewer) -> Response:
    found = await _with_tree(ctx, definition_id)
    version = found["stored"].version
    # Escapes every label it draws (web/svg_charts.py): safe to embed.
    graph = Markup(version_tree_svg(found["root"], found["runs"], current=version.id))
    return templates.TemplateResponse(
        request,
        "definitions_show.html",
        {
            **found,
            "this": version,
            "definition": found["stored"].definition,
            "graph": graph,
            "tree": [n.version for n in _flatten(found["root"])],
            "own_runs": found["runs"].get(version.id, []),
        },
    )


@router.get("/definitions/{definition_id}/edit", response_class=HTMLResponse)
async def edit_definition_page(request: Request, definition_id: str, ctx: Viewer) -> Response:
    found = await _with_tree(ctx, definition_id)
    return templates.TemplateResponse(
        request,
        "definitions_edit.html",
        {
            "stored": found["stored"],
            "markdown": found["markdown"],
            "tree": [n.version for n in _flatten(found["root"])],
        },
    )


@router.get("/definitions/{definition_id}/diff", response_class=HTMLResponse)
async def diff_page(
    request: Request,
    definition_id: str,
    ctx: Viewer,
    to: Annotated[str | None, Query(max_length=100)] = None,
) -> Response:
    """`?to=OTHER`: this version (left) and OTHER (right) side by side; without `to`, the
    parent (left) and this version (right)."""
    async with ctx.db.transaction() as conn:
        a = b = await service.get_definition(conn, ctx.org_id, definition_id)
        if to is not None:
            b = await service.get_definition(conn, ctx.org_id, to)
        elif a.version.parent_id is not None:
            a = await service.get_definition(conn, ctx.org_id, a.version.parent_id)
        changes = await service.diff(conn, ctx.org_id, a.version.id, b.version.id)
        left = await service.export_markdown(conn, ctx.org_id, a.version.id)
        right = await service.export_markdown(conn, ctx.org_id, b.version.id)
        root = await service.tree(conn, ctx.org_id, a.version.id)
    return templates.TemplateResponse(
        request,
        "definitions_diff.html",
        {
            "a": a.version,
            "b": b.version,
            "summary": summarize_diff(changes),
            "rows": side_by_side(left, right),
            "tree": [n.version for n in _flatten(root)],
        },
    )
