"""Multi-model validation pages: the organisation's tasks, and one task's RA tags with their
consensus, agreement level and the models that dissent (the reads of /api/assumptions)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from valuerank.api.deps import Viewer
from valuerank.validation.model import parse_task_id
from valuerank.validation.reads import multi_model_view, task_consensus
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
    async with ctx.db.transaction() as conn:
        task = await get_task(conn, ctx.org_id, task_id)
    summary = (await task_consensus(ctx.db, ctx.org_id, task_id)).data()
    views = {
        tag["ra_tag_id"]: (
            await multi_model_view(ctx.db, ctx.org_id, task_id, tag["ra_tag_id"])
        ).data()
        for tag in summary["ra_tag_summaries"]
    }
    return templates.TemplateResponse(
        request, "validation_task.html", {"task": task, "summary": summary, "views": views}
    )
