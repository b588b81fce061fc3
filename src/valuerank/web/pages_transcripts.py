"""Transcript pages: `/transcripts` searches and filters the organisation's transcripts (text,
run, model, scenario, decision, the judges' agreement level and whether they disagreed) in
one of five orders, in cursor pages, with the count of all that match and each answer's
opening; `/transcripts/{id}` shows one: the dialogue turn by turn, the decision, and beside it
the judges' readings and their consensus. Opened from a list (its links carry the list's
filters and sort), a transcript has the list's previous and next and its place in it. Both
read through `runs.transcripts`, as `/api/transcripts` does."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, Response

from valuerank.api.deps import Viewer
from valuerank.api.pagination import MAX_CURSOR_LENGTH, Limit
from valuerank.api.routes_transcripts import cursor_key, page_of_transcripts
from valuerank.errors import InvalidInputError
from valuerank.runs.service import get_run
from valuerank.runs.transcript_order import SORT_LABELS, TranscriptSort
from valuerank.runs.transcripts import (
    AGREEMENT_LEVELS,
    MAX_QUERY_LENGTH,
    UNJUDGED,
    TranscriptFilter,
    get_transcript,
    list_total,
    list_transcripts,
    neighbours,
)
from valuerank.web.templating import templates

router = APIRouter(include_in_schema=False)

PAGE_SIZE = 50
DECISIONS = range(1, 6)
# The agreement filter's choices: the levels a consensus stores, then no consensus yet.
AGREEMENTS = {level: level.replace("_", " ") for level in AGREEMENT_LEVELS} | {
    UNJUDGED: "not judged"
}
DISAGREEMENTS = {"yes": True, "no": False}

Field = Annotated[str | None, Query(max_length=300)]
Short = Annotated[str | None, Query(max_length=20)]


def transcript_filter(
    q: str | None,
    run: str | None,
    model: str | None,
    scenario: str | None,
    decision: str | None,
    agreement: str | None = None,
    disagreement: str | None = None,
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
    if agreement and agreement not in AGREEMENTS:
        raise InvalidInputError(
            f"agreement must be one of {', '.join(AGREEMENTS)}, not {agreement!r}",
            hint="leave it empty for any agreement",
        )
    if disagreement and disagreement not in DISAGREEMENTS:
        raise InvalidInputError(
            f"disagreement must be yes or no, not {disagreement!r}",
            hint="leave it empty for either",
        )
    return TranscriptFilter(
        run or None,
        model or None,
        scenario or None,
        code,
        q or None,
        agreement or None,
        DISAGREEMENTS[disagreement] if disagreement else None,
    )


def transcript_sort(sort: str | None) -> TranscriptSort:
    try:
        return TranscriptSort(sort or TranscriptSort.NEWEST)
    except ValueError:
        raise InvalidInputError(
            f"sort must be one of {', '.join(TranscriptSort)}, not {sort!r}",
            hint="leave it empty for newest first",
        ) from None


@dataclass(frozen=True)
class ListQuery:
    """A transcript list's search form: its fields as typed, and as understood."""

    form: dict[str, str]
    filters: TranscriptFilter
    order: TranscriptSort
    sorted: bool  # the sort was named: a link from a list (a transcript then walks it)

    @property
    def in_list(self) -> dict[str, str]:
        """What the list's links keep: its filters and sort."""
        return {k: v for k, v in self.form.items() if v} | {"sort": self.order.value}


def list_query(
    q: Field = None,
    run: Field = None,
    model: Field = None,
    scenario: Field = None,
    decision: Annotated[str | None, Query(max_length=10)] = None,
    agreement: Short = None,
    disagreement: Short = None,
    sort: Short = None,
) -> ListQuery:
    """The list's query parameters, shared by the list and by a transcript opened from it."""
    typed = {
        "q": q,
        "run": run,
        "model": model,
        "scenario": scenario,
        "decision": decision,
        "agreement": agreement,
        "disagreement": disagreement,
    }
    return ListQuery(
        form={name: value or "" for name, value in typed.items()},
        filters=transcript_filter(q, run, model, scenario, decision, agreement, disagreement),
        order=transcript_sort(sort),
        sorted=sort is not None,
    )


Listing = Annotated[ListQuery, Depends(list_query)]


@router.get("/transcripts", response_class=HTMLResponse)
async def transcripts_page(
    request: Request,
    ctx: Viewer,
    listing: Listing,
    cursor: Annotated[str | None, Query(max_length=MAX_CURSOR_LENGTH)] = None,
    limit: Limit = PAGE_SIZE,
) -> Response:
    filters, order = listing.filters, listing.order
    after = cursor_key(order, cursor)
    async with ctx.db.transaction() as conn:
        the_run = None if filters.run is None else await get_run(conn, ctx.org_id, filters.run)
        found = await list_transcripts(
            conn, ctx.org_id, filters, limit=limit, after=after, sort=order
        )
        first_page = found if after is None else None
        total = await list_total(conn, ctx.org_id, filters, first_page, limit=limit)
    listed = page_of_transcripts(found, limit=limit, sort=order, total=total)
    form = listing.form
    query = {k: v for k, v in form.items() if v}
    # What the list's links keep: its filters and sort (a transcript's links, its pages).
    in_list = listing.in_list
    return templates.TemplateResponse(
        request,
        "transcripts.html",
        {
            "transcripts": listed["transcripts"],
            "total": total,
            "next_cursor": listed["next_cursor"],
            "paged": cursor is not None,
            "form": form | {"sort": order.value},
            "query": query,
            "in_list": in_list,
            "pager": in_list | ({} if limit == PAGE_SIZE else {"limit": str(limit)}),
            "the_run": the_run,
            "decisions": DECISIONS,
            "agreements": AGREEMENTS,
            "sorts": SORT_LABELS,
            "sort_label": SORT_LABELS[order],
        },
    )


def judge_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Each judge's reading with its vote in the consensus (validated, partial, rejected)."""
    consensus = data.get("consensus") or {}
    votes = {v.get("model"): v for v in (consensus.get("consensus") or {}).get("votes", []) or []}
    return [{**j, "vote": votes.get(j["judge_model"])} for j in data["judgments"]]


@router.get("/transcripts/{transcript_id}", response_class=HTMLResponse)
async def transcript_page(
    request: Request,
    transcript_id: str,
    ctx: Viewer,
    listing: Listing,
) -> Response:
    # Opened from a list, the link names its sort (and any filters): walk that list.
    from_list = listing.sorted
    filters, order = listing.filters, listing.order
    async with ctx.db.transaction() as conn:
        data = await get_transcript(conn, ctx.org_id, transcript_id)
        the_run = await get_run(conn, ctx.org_id, data["run_id"])
        near = await neighbours(conn, ctx.org_id, data, filters, order) if from_list else None
    in_list = listing.in_list
    return templates.TemplateResponse(
        request,
        "transcript.html",
        {
            "t": data,
            "run": the_run,
            "judges": judge_rows(data),
            "consensus": data.get("consensus"),
            "near": near,
            "in_list": in_list,
            "sort_label": SORT_LABELS[order],
        },
    )
