"""/api/transcripts and /api/runs/{id}/transcripts: transcripts filtered by run, model,
scenario and decision code, searched by text (`q`: a substring, case-insensitive for ASCII
letters, the same results on SQLite and PostgreSQL), newest first in cursor pages; one
transcript verbatim with its metadata and judgments. Another organisation's is 404."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from valuerank.api.deps import Viewer
from valuerank.api.envelope import ok
from valuerank.api.pagination import Cursor, Limit, after_created, page
from valuerank.api.schemas import Envelope
from valuerank.api.schemas.runs import TranscriptPage
from valuerank.runs.transcripts import (
    MAX_QUERY_LENGTH,
    TranscriptFilter,
    get_transcript,
    list_transcripts,
)

router = APIRouter(tags=["transcripts"])

Model = Annotated[str | None, Query(max_length=300, description="Only this target model.")]
Scenario = Annotated[str | None, Query(max_length=300, description="Only this scenario id.")]
Decision = Annotated[int | None, Query(ge=1, le=5, description="Only this decision code.")]
Text = Annotated[
    str | None,
    Query(
        max_length=MAX_QUERY_LENGTH,
        description="Only transcripts whose text holds this (ASCII letters in any case).",
    ),
]


async def _page(
    ctx: Viewer, filters: TranscriptFilter, limit: int, cursor: str | None
) -> JSONResponse:
    async with ctx.db.transaction() as conn:
        items = await list_transcripts(
            conn, ctx.org_id, filters, limit=limit, after=after_created(cursor)
        )
    return ok(page("transcripts", items, limit=limit, key=lambda t: [t["created_at"], t["id"]]))


@router.get("/api/transcripts", response_model=Envelope[TranscriptPage])
async def list_transcripts_route(
    ctx: Viewer,
    limit: Limit = 50,
    cursor: Cursor = None,
    run: Annotated[str | None, Query(max_length=100, description="Run id or prefix.")] = None,
    model: Model = None,
    scenario: Scenario = None,
    decision: Decision = None,
    q: Text = None,
) -> JSONResponse:
    """The organisation's transcripts, newest first, without their text (see
    `/api/transcripts/{id}`); pass `next_cursor` back as `cursor` with the same filters."""
    filters = TranscriptFilter(run, model, scenario, decision, q)
    return await _page(ctx, filters, limit, cursor)


@router.get("/api/runs/{run_id}/transcripts", response_model=Envelope[TranscriptPage])
async def run_transcripts_route(
    run_id: str,
    ctx: Viewer,
    limit: Limit = 50,
    cursor: Cursor = None,
    model: Model = None,
    scenario: Scenario = None,
    decision: Decision = None,
    q: Text = None,
) -> JSONResponse:
    """The run's transcripts (as `/api/transcripts?run=…`); 404 for an unknown run."""
    filters = TranscriptFilter(run_id, model, scenario, decision, q)
    return await _page(ctx, filters, limit, cursor)


@router.get("/api/transcripts/{transcript_id}")
async def get_transcript_route(transcript_id: str, ctx: Viewer) -> JSONResponse:
    """One transcript: the CLI markdown verbatim (`content`), its turns with tokens and
    latency, decision, cost, consensus and every judge's reading (`judgments`)."""
    async with ctx.db.transaction() as conn:
        data = await get_transcript(conn, ctx.org_id, transcript_id)
    return ok(data)
