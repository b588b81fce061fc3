"""Transcript pages: `/transcripts` searches and filters the organisation's transcripts (text,
run, model, scenario, decision; newest first, cursor pages) and `/transcripts/{id}` shows one:
the dialogue turn by turn, the decision, and beside it the judges' readings and their
consensus. Both read through `runs.transcripts`, as `/api/transcripts` does."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from valuerank.api.deps import Viewer
from valuerank.api.pagination import MAX_CURSOR_LENGTH, Limit, after_created, page
from valuerank.errors import InvalidInputError
from valuerank.runs.service import get_run
from valuerank.runs.transcripts import (
    MAX_QUERY_LENGTH,
    TranscriptFilter,
    get_transcript,
    list_transcripts,
)
from valuerank.web.templating import templates

router = APIRouter(include_in_schema=False)

PAGE_SIZE = 50
DECISIONS = range(1, 6)

Field = Annotated[str | None, Query(max_length=300)]


def transcript_filter(
    q: str | None, run: str | None, model: str | None, scenario: str | None, decision: str | None
) -> TranscriptFilter:
    """The search form's fields as a filter (an empty field: any)."""
    code: int | None = None
    if decision:
        if not decision.isdecimal() or int(decision) not in DECISIONS:
            raise InvalidInputError(
                f"decision must be a code from 1 to 5, not {decision!r}",
                hint="leave it empty for any decision",
            )
        code = int(decision)
    if q and len(q) > MAX_QUERY_LENGTH:
        raise InvalidInputError(f"the search text is longer than {MAX_QUERY_LENGTH} characters")
    return TranscriptFilter(run or None, model or None, scenario or None, code, q or None)


@router.get("/transcripts", response_class=HTMLResponse)
async def transcripts_page(
    request: Request,
    ctx: Viewer,
    q: Field = None,
    run: Field = None,
    model: Field = None,
    scenario: Field = None,
    decision: Annotated[str | None, Query(max_length=10)] = None,
    cursor: Annotated[str | None, Query(max_length=MAX_CURSOR_LENGTH)] = None,
    limit: Limit = PAGE_SIZE,
) -> Response:
    filters = transcript_filter(q, run, model, scenario, decision)
    async with ctx.db.transaction() as conn:
        the_run = None if filters.run is None else await get_run(conn, ctx.org_id, filters.run)
        found = await list_transcripts(
            conn, ctx.org_id, filters, limit=limit, after=after_created(cursor)
        )
    listed = page("transcripts", found, limit=limit, key=lambda t: [t["created_at"], t["id"]])
    form = {
        "q": q or "",
        "run": run or "",
        "model": model or "",
        "scenario": scenario or "",
        "decision": decision or "",
    }
    return templates.TemplateResponse(
        request,
        "transcripts.html",
        {
            "transcripts": listed["transcripts"],
            "next_cursor": listed["next_cursor"],
            "paged": cursor is not None,
            "form": form,
            "query": {k: v for k, v in form.items() if v},
            # What the pager's links keep: the search and a page size asked for.
            "pager": {k: v for k, v in form.items() if v}
            | ({} if limit == PAGE_SIZE else {"limit": str(limit)}),
            "the_run": the_run,
            "decisions": DECISIONS,
        },
    )


def judge_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Each judge's reading with its vote in the consensus (validated, partial, rejected)."""
    consensus = data.get("consensus") or {}
    votes = {v.get("model"): v for v in (consensus.get("consensus") or {}).get("votes", []) or []}
    return [{**j, "vote": votes.get(j["judge_model"])} for j in data["judgments"]]


@router.get("/transcripts/{transcript_id}", response_class=HTMLResponse)
async def transcript_page(request: Request, transcript_id: str, ctx: Viewer) -> Response:
    async with ctx.db.transaction() as conn:
        data = await get_transcript(conn, ctx.org_id, transcript_id)
        run = await get_run(conn, ctx.org_id, data["run_id"])
    return templates.TemplateResponse(
        request,
        "transcript.html",
        {"t": data, "run": run, "judges": judge_rows(data), "consensus": data.get("consensus")},
    )
