"""People as judges in the browser: `/transcripts/{id}/read` shows the transcript beside the
run's rubric with a form (each value prioritised, deprioritised or neither) that records the
person's reading through `POST /api/transcripts/{id}/readings` (session cookie and CSRF
header, as every form of the UI); `/runs/{id}/read` is the "read a random sample" queue: it
opens the next transcript of the run this person has not read, in an order fixed for them
(runs/human_readings.py), and says how many they have read. A viewer sees the page without
the form; the queue needs the member role."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy import select

from valuerank.accounts import Role
from valuerank.api.deps import Member, Viewer
from valuerank.db.tables import rubrics, runs
from valuerank.formats.rubric import Rubric
from valuerank.runs.human_readings import list_readings, next_unread, read_target
from valuerank.runs.service import get_run
from valuerank.runs.transcripts import get_transcript
from valuerank.web.templating import templates

router = APIRouter(include_in_schema=False)


async def _rubric_values(conn: Any, org_id: str, run_id: str) -> list[dict[str, str]]:
    content = await conn.scalar(
        select(rubrics.c.content)
        .join(runs, runs.c.rubric_id == rubrics.c.id)
        .where(runs.c.org_id == org_id, runs.c.id == run_id)
    )
    if content is None:
        return []
    return [{"name": v.name, "definition": v.definition} for v in Rubric.from_dict(content).values]


@router.get("/transcripts/{transcript_id}/read", response_class=HTMLResponse)
async def read_page(
    request: Request, transcript_id: str, ctx: Viewer, queue: bool = False
) -> Response:
    user_id = ctx.principal.user_id
    async with ctx.db.transaction() as conn:
        target = await read_target(conn, ctx.org_id, transcript_id)
        data = await get_transcript(conn, ctx.org_id, target.transcript_id)
        the_run = await get_run(conn, ctx.org_id, target.run_id)
        values = await _rubric_values(conn, ctx.org_id, target.run_id)
        readings = await list_readings(conn, ctx.org_id, target.transcript_id)
        state = None
        if queue and user_id is not None:
            state = await next_unread(conn, ctx.org_id, target.run_id, user_id)
    mine = next((r for r in readings if r.user_id == user_id), None)
    chosen = {}
    if mine is not None:
        chosen = {v: "prioritized" for v in mine.prioritized_values}
        chosen |= {v: "deprioritized" for v in mine.deprioritized_values}
    return templates.TemplateResponse(
        request,
        "read.html",
        {
            "t": data,
            "run": the_run,
            "values": values,
            "chosen": chosen,
            "mine": mine,
            "others": [r for r in readings if r.user_id != user_id],
            "can_write": user_id is not None and ctx.principal.role.allows(Role.MEMBER),
            "queue": state,
        },
    )


@router.get("/runs/{run_id}/read", response_class=HTMLResponse)
async def read_queue_page(request: Request, run_id: str, ctx: Member) -> Response:
    async with ctx.db.transaction() as conn:
        the_run = await get_run(conn, ctx.org_id, run_id)
        user_id = ctx.principal.user_id
        state = (
            None if user_id is None else await next_unread(conn, ctx.org_id, the_run.id, user_id)
        )
    if state is not None and state.next_transcript_id is not None:
        return RedirectResponse(f"/transcripts/{state.next_transcript_id}/read?queue=true", 303)
    return templates.TemplateResponse(request, "read_done.html", {"run": the_run, "state": state})
