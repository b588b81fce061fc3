"""/api/transcripts and /api/runs/{id}/transcripts: transcripts filtered by run, model,
scenario, decision code and the judges' consensus (its level, whether they disagreed),
searched by text (`q`: a substring, case and Unicode normalisation ignored, the same results
on SQLite and PostgreSQL), in one of five orders in cursor pages with the count of all that
match; one transcript verbatim with its metadata and judgments. Another organisation's is
404."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from valuerank.api.deps import Viewer
from valuerank.api.envelope import ok
from valuerank.api.pagination import (
    Cursor,
    InvalidCursorError,
    Limit,
    decode_cursor,
    encode_cursor,
)
from valuerank.api.schemas import Envelope
from valuerank.api.schemas.runs import TranscriptPage
from valuerank.runs.transcript_order import NO_DECISION, TranscriptSort, key_names, sort_key
from valuerank.runs.transcripts import (
    MAX_QUERY_LENGTH,
    Total,
    TranscriptFilter,
    get_transcript,
    list_total,
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
        description="Only transcripts whose text holds this, in any case and Unicode "
        "normalisation (`café` finds `CAFÉ`, `strasse` finds `Straße`); accents count.",
    ),
]
Sort = Annotated[
    TranscriptSort,
    Query(
        description="`newest` first (the default), `oldest` first, by `decision` (1 to 5, "
        "none last), by `model` or by `scenario` id (ties newest first)."
    ),
]
Agreement = Annotated[
    Literal["STRONG", "MODERATE", "WEAK", "no_data", "unjudged"] | None,
    Query(
        description="Only transcripts whose judges' consensus has this agreement level, or "
        "`unjudged`: no consensus yet."
    ),
]
Disagreement = Annotated[
    bool | None,
    Query(
        description="true: only judged transcripts whose judges disagreed "
        "(`model_disagreement`); false: only judged ones whose judges did not."
    ),
]
_HINT = "pass back the next_cursor of the previous page with the same sort, or omit cursor"


def transcript_cursor(sort: TranscriptSort, item: dict[str, Any]) -> str:
    """The cursor after `item`. Newest first keeps the API's `[created_at, id]`; another sort
    is named in its cursor, so a cursor passed with a different sort is refused, not misread."""
    key = sort_key(sort, item)
    return encode_cursor(key if sort is TranscriptSort.NEWEST else [sort.value, *key])


def cursor_key(sort: TranscriptSort, cursor: str | None) -> list[Any] | None:
    """The position a cursor of `sort` holds; `InvalidCursorError` for any other cursor."""
    if cursor is None:
        return None
    names = key_names(sort)
    named = sort is not TranscriptSort.NEWEST
    raw = decode_cursor(cursor, arity=len(names) + named)
    if named and raw[0] != sort.value:
        raise InvalidCursorError("the cursor was made for another sort", hint=_HINT)
    key = raw[1:] if named else raw
    if not all(_fits(name, sort, value) for name, value in zip(names, key, strict=True)):
        raise InvalidCursorError("the cursor is not one this server wrote", hint=_HINT)
    return key


def _fits(name: str, sort: TranscriptSort, value: Any) -> bool:
    if name == "lead" and sort is TranscriptSort.DECISION:
        return type(value) is int and 1 <= value <= NO_DECISION
    if not isinstance(value, str) or "\x00" in value:
        return False
    if name != "created_at":
        return True
    try:
        moment = datetime.fromisoformat(value)
        moment.astimezone(UTC)
    except (ValueError, OverflowError):
        return False
    return moment.tzinfo is not None


def page_of_transcripts(
    items: Sequence[dict[str, Any]], *, limit: int, sort: TranscriptSort, total: Total
) -> dict[str, Any]:
    """A page of a keyset query that fetched `limit + 1` rows, with the count of all."""
    shown = list(items[:limit])
    more = len(items) > limit
    return {
        "transcripts": shown,
        "count": len(shown),
        "total": total.count,
        "total_exact": total.exact,
        "next_cursor": transcript_cursor(sort, shown[-1]) if more and shown else None,
    }


async def _page(
    ctx: Viewer, filters: TranscriptFilter, limit: int, cursor: str | None, sort: TranscriptSort
) -> JSONResponse:
    after = cursor_key(sort, cursor)
    async with ctx.db.transaction() as conn:
        items = await list_transcripts(
            conn, ctx.org_id, filters, limit=limit, after=after, sort=sort
        )
        first_page = items if after is None else None
        total = await list_total(conn, ctx.org_id, filters, first_page, limit=limit)
    return ok(page_of_transcripts(items, limit=limit, sort=sort, total=total))


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
    agreement: Agreement = None,
    disagreement: Disagreement = None,
    sort: Sort = TranscriptSort.NEWEST,
) -> JSONResponse:
    """The organisation's transcripts without their text (see `/api/transcripts/{id}`), each
    with the opening of its answer (`answer_preview`), and `total`: how many match in all
    (counted up to 10,000, or 1,000 with `q` or a consensus filter; `total_exact` is false
    when more match). Pass `next_cursor` back as `cursor` with the same filters and sort."""
    filters = TranscriptFilter(run, model, scenario, decision, q, agreement, disagreement)
    return await _page(ctx, filters, limit, cursor, sort)


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
    agreement: Agreement = None,
    disagreement: Disagreement = None,
    sort: Sort = TranscriptSort.NEWEST,
) -> JSONResponse:
    """The run's transcripts (as `/api/transcripts?run=…`); 404 for an unknown run."""
    filters = TranscriptFilter(run_id, model, scenario, decision, q, agreement, disagreement)
    return await _page(ctx, filters, limit, cursor, sort)


@router.get("/api/transcripts/{transcript_id}")
async def get_transcript_route(transcript_id: str, ctx: Viewer) -> JSONResponse:
    """One transcript: the CLI markdown verbatim (`content`), its turns with tokens and
    latency, decision, cost, consensus and every judge's reading (`judgments`)."""
    async with ctx.db.transaction() as conn:
        data = await get_transcript(conn, ctx.org_id, transcript_id)
    return ok(data)
