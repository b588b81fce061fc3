"""Multi-model validation pages: the organisation's tasks (and a form to create one), and one
task's RA tags with their consensus, agreement level and the models that dissent (the reads
of /api/assumptions), with forms to add tags and ask models to validate them. The asked
validations still queued or failed are listed; while any is queued or running the page's
script (static/setup.js) refreshes those parts until the answers are recorded."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from valuerank.api.deps import Viewer
from valuerank.registry.service import ensure_registry, list_models
from valuerank.validation.model import parse_task_id
from valuerank.validation.reads import multi_model_view, task_consensus
from valuerank.validation.requests import unfinished_validations
from valuerank.validation.store import get_task, list_tasks
from valuerank.web.templating import templates

router = APIRouter(include_in_schema=False)


@router.get("/validation", response_class=HTMLResponse)
async def validation_page(request: Request, ctx: Viewer) -> Response:
    async with ctx.db.transaction() as conn:
        tasks = await list_tasks(conn, ctx.org_id, limit=200)
    return templates.TemplateResponse(request, "validation.html", {"tasks": tasks})


@router.get("/validation/{task_ref}", response_class=HTMLResponse)
async def validation_task_page(request: Request, task_ref: str, ctx: Viewer) -> Response:
    task_id = parse_task_id(task_ref)
    await ensure_registry(ctx.db)  # an empty registry gets the catalog: models to ask
    async with ctx.db.transaction() as conn:
        task = await get_task(conn, ctx.org_id, task_id)
        asked = await unfinished_validations(conn, ctx.org_id, task_id)
        models = await list_models(conn, active_only=True)
    summary = (await task_consensus(ctx.db, ctx.org_id, task_id)).data()
    views = {
        tag["ra_tag_id"]: (
            await multi_model_view(ctx.db, ctx.org_id, task_id, tag["ra_tag_id"])
        ).data()
        for tag in summary["ra_tag_summaries"]
    }
    return templates.TemplateResponse(
        request,
        "validation_task.html",
        {
            "task": task,
            "summary": summary,
            "views": views,
            "asked": asked,
            "pending": sum(1 for a in asked if a.pending),
            "models": models,
        },
    )
