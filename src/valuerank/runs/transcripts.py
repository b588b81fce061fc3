"""Reading transcripts: filtered and searched lists in one of five orders (keyset pages, with
the count of all that match and each answer's opening), a transcript's previous and next in
such a list, and one transcript verbatim with its judgments.

Text search is a substring match over the stored markdown that ignores case and Unicode
normalisation the same way on SQLite and PostgreSQL: it compares the words folded in Python
with the transcript's folded copy (`search_text`, see runs/searchable.py), exactly, so "café"
finds "CAFÉ" and "strasse" finds "Straße" on both. The judges' consensus filters read the
stored consensus (its `agreement_level` and `model_disagreement`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import judgments, transcripts
from valuerank.errors import InvalidInputError, NotFoundError
from valuerank.queue.dialect import iso
from valuerank.runs.run import get_run
from valuerank.runs.searchable import searchable
from valuerank.runs.transcript_order import TranscriptSort, beyond, order_by, sort_key

_ESCAPE = "\\"
MAX_QUERY_LENGTH = 200
# The judges' agreement levels a consensus stores, and "unjudged" for transcripts without one.
AGREEMENT_LEVELS = ("STRONG", "MODERATE", "WEAK", "no_data")
UNJUDGED = "unjudged"
# A count reads at most this many matching transcripts (and one more, to know there are
# more). A filter on indexed columns counts index entries: 10,000 cost a few milliseconds.
COUNT_CAP = 10_000
# A text search or a filter on the judges' consensus reads each matching row (its folded
# text, its consensus), about 10 µs each: 1,000 keep the count's cost under 20 ms.
CONTENT_COUNT_CAP = 1_000
PREVIEW_CHARS = 140  # of an answer, shown in a list
_PREVIEW_READ = 400  # characters read for it: room to fold runs of whitespace

# Everything but the text itself: what a list shows of each transcript.
_SUMMARY = [c for c in transcripts.c if c.name not in ("content", "turns", "search_text")]
_stored_level = transcripts.c.consensus[("consensus", "agreement_level")].as_string()
_stored_disagreement = transcripts.c.consensus[("consensus", "model_disagreement")].as_boolean()
_answer_start = func.substr(transcripts.c.turns[(0, "target")].as_string(), 1, _PREVIEW_READ)


@dataclass(frozen=True)
class TranscriptFilter:
    """Which transcripts to list; None: any. `run` is a run id or unique prefix."""

    run: str | None = None
    model: str | None = None
    scenario_id: str | None = None
    decision_code: int | None = None
    text: str | None = None  # a substring of the transcript (see the module's note)
    agreement: str | None = None  # one of AGREEMENT_LEVELS, or UNJUDGED
    disagreement: bool | None = None  # the judges disagreed (only judged transcripts)

    @property
    def count_cap(self) -> int:
        """Up to how many matches a count of this filter goes (see COUNT_CAP)."""
        reads_rows = self.text or self.agreement is not None or self.disagreement is not None
        return CONTENT_COUNT_CAP if reads_rows else COUNT_CAP


@dataclass(frozen=True)
class Total:
    """How many transcripts match, counted up to a cap."""

    count: int  # at most the cap
    exact: bool  # False: more than `count` match


@dataclass(frozen=True)
class Neighbours:
    """Where a transcript stands in a filtered, sorted list."""

    previous: str | None
    next: str | None
    listed: bool  # the transcript is in the list
    position: int | None  # 1-based; None when not listed or beyond the counted ones
    total: Total


def _refuse_nul(**values: str | None) -> None:
    """PostgreSQL stores no NUL character; one in a filter is a bad request on both."""
    for name, value in values.items():
        if value is not None and "\x00" in value:
            raise InvalidInputError(f"{name} contains a NUL character")


def like_pattern(text: str) -> str:
    """`%text%` folded for search (runs/searchable.py), LIKE's wildcards escaped."""
    escaped = "".join(_ESCAPE + ch if ch in "%_\\" else ch for ch in searchable(text))
    return f"%{escaped}%"


def answer_preview(answer: str | None) -> str:
    """The opening of an answer on one line: at most PREVIEW_CHARS characters."""
    line = " ".join((answer or "").split())
    if len(line) <= PREVIEW_CHARS:
        return line
    return line[: PREVIEW_CHARS - 1].rstrip() + "…"


def summary_dict(row: Any) -> dict[str, Any]:
    return {
        "id": row.id,
        "run_id": row.run_id,
        "scenario_id": row.scenario_id,
        "model": row.model,
        "sample_index": row.sample_index,
        "decision_code": row.decision_code,
        "decision_reason": row.decision_reason,
        "rationale": row.rationale,
        "consensus": row.consensus,
        "input_tokens": row.input_tokens,
        "output_tokens": row.output_tokens,
        "latency_ms": row.latency_ms,
        "cost_usd": row.cost_usd,
        "finish_reason": row.finish_reason,
        "synthetic": row.synthetic,
        "cached": row.cached,
        "created_at": iso(row.created_at),
    }


async def _conditions(
    conn: AsyncConnection, org_id: str, filters: TranscriptFilter
) -> list[ColumnElement[bool]]:
    _refuse_nul(
        run=filters.run, model=filters.model, scenario_id=filters.scenario_id, q=filters.text
    )
    where = [transcripts.c.org_id == org_id]
    if filters.run is not None:
        run = await get_run(conn, org_id, filters.run)  # 404 for an unknown or foreign run
        where.append(transcripts.c.run_id == run.id)
    if filters.model is not None:
        where.append(transcripts.c.model == filters.model)
    if filters.scenario_id is not None:
        where.append(transcripts.c.scenario_id == filters.scenario_id)
    if filters.decision_code is not None:
        where.append(transcripts.c.decision_code == filters.decision_code)
    if filters.agreement == UNJUDGED:
        where.append(_stored_level.is_(None))
    elif filters.agreement is not None:
        if filters.agreement not in AGREEMENT_LEVELS:
            raise InvalidInputError(
                f"agreement must be one of {', '.join((*AGREEMENT_LEVELS, UNJUDGED))}, "
                f"not {filters.agreement!r}"
            )
        where.append(_stored_level == filters.agreement)
    if filters.disagreement is not None:
        where.append(_stored_disagreement.is_(filters.disagreement))
    if filters.text:
        if len(filters.text) > MAX_QUERY_LENGTH:
            raise InvalidInputError(f"q is longer than {MAX_QUERY_LENGTH} characters")
        where.append(transcripts.c.search_text.like(like_pattern(filters.text), escape=_ESCAPE))
    return where


async def list_transcripts(
    conn: AsyncConnection,
    org_id: str,
    filters: TranscriptFilter | None = None,
    *,
    limit: int = 50,
    after: Sequence[Any] | None = None,
    sort: TranscriptSort = TranscriptSort.NEWEST,
) -> list[dict[str, Any]]:
    """Up to `limit + 1` transcripts in `sort` order (the extra one says a next page exists),
    after the one at `after` (its `sort_key`); without their text, with each answer's opening
    (`answer_preview`)."""
    where = await _conditions(conn, org_id, filters or TranscriptFilter())
    if after is not None:
        where.append(beyond(sort, after, conn.dialect.name))
    query = (
        select(*_SUMMARY, _answer_start.label("answer_start"))
        .where(*where)
        .order_by(*order_by(sort))
        .limit(limit + 1)
    )
    return [
        summary_dict(row) | {"answer_preview": answer_preview(row.answer_start)}
        for row in await conn.execute(query)
    ]


async def _count(conn: AsyncConnection, where: Sequence[ColumnElement[bool]], cap: int) -> Total:
    capped = select(transcripts.c.id).where(*where).limit(cap + 1).subquery()
    found = int((await conn.execute(select(func.count()).select_from(capped))).scalar_one())
    return Total(min(found, cap), found <= cap)


async def count_transcripts(
    conn: AsyncConnection,
    org_id: str,
    filters: TranscriptFilter | None = None,
    *,
    cap: int | None = None,
) -> Total:
    """How many transcripts match `filters`, up to `cap` (default: the filter's
    `count_cap`): one COUNT query."""
    filters = filters or TranscriptFilter()
    return await _count(conn, await _conditions(conn, org_id, filters), cap or filters.count_cap)


async def list_total(
    conn: AsyncConnection,
    org_id: str,
    filters: TranscriptFilter | None,
    first_page: Sequence[Any] | None,
    *,
    limit: int,
    cap: int | None = None,
) -> Total:
    """The total of a list shown with one of its pages: `first_page` is what `list_transcripts`
    found without a cursor (None for a later page). When that page held every match, its
    length is the total, without reading the matches a second time (a rare search term
    finds few transcripts but reads them all)."""
    if first_page is not None and len(first_page) <= limit:
        return Total(len(first_page), True)
    return await count_transcripts(conn, org_id, filters, cap=cap)


async def neighbours(
    conn: AsyncConnection,
    org_id: str,
    transcript: dict[str, Any],
    filters: TranscriptFilter | None = None,
    sort: TranscriptSort = TranscriptSort.NEWEST,
    *,
    cap: int | None = None,
) -> Neighbours:
    """The transcripts before and after `transcript` (a summary) in the list `filters` and
    `sort` give, its place in it and the list's length (both counted up to `cap`); the same
    keyset order as the list's pages."""
    filters = filters or TranscriptFilter()
    where = await _conditions(conn, org_id, filters)
    cap = cap or filters.count_cap
    dialect = conn.dialect.name
    key = sort_key(sort, transcript)

    async def first(reverse: bool) -> str | None:
        query = (
            select(transcripts.c.id)
            .where(*where, beyond(sort, key, dialect, reverse=reverse))
            .order_by(*order_by(sort, reverse=reverse))
            .limit(1)
        )
        return (await conn.execute(query)).scalar_one_or_none()

    member = await conn.execute(
        select(transcripts.c.id).where(*where, transcripts.c.id == transcript["id"])
    )
    listed = member.first() is not None
    position = None
    if listed:
        before = await _count(conn, [*where, beyond(sort, key, dialect, reverse=True)], cap)
        position = before.count + 1 if before.exact else None
    total = await _count(conn, where, cap)
    return Neighbours(await first(True), await first(False), listed, position, total)


async def get_transcript(conn: AsyncConnection, org_id: str, transcript_id: str) -> dict[str, Any]:
    """One transcript of the organisation: its markdown verbatim, its turns, its metadata and
    every judge's reading. Another organisation's is not found, like an unknown one."""
    row = None
    if "\x00" not in transcript_id:  # no id holds one (and PostgreSQL refuses it)
        row = (
            await conn.execute(
                select(*_SUMMARY, transcripts.c.content, transcripts.c.turns).where(
                    transcripts.c.org_id == org_id, transcripts.c.id == transcript_id
                )
            )
        ).first()
    if row is None:
        raise TranscriptNotFoundError(
            f"no transcript with id {transcript_id!r}", hint="list them with GET /api/transcripts"
        )
    readings = await conn.execute(
        select(judgments)
        .where(judgments.c.org_id == org_id, judgments.c.transcript_id == row.id)
        .order_by(judgments.c.judge_model)
    )
    first_answer = row.turns[0].get("target") if row.turns else None
    return {
        **summary_dict(row),
        "answer_preview": answer_preview(first_answer),
        "content": row.content,
        "turns": row.turns,
        "judgments": [
            {
                "judge_model": j.judge_model,
                "decision": j.decision,
                "prioritized_values": j.prioritized_values,
                "deprioritized_values": j.deprioritized_values,
                "confidence": j.confidence,
                "rationale": j.rationale,
                "input_tokens": j.input_tokens,
                "output_tokens": j.output_tokens,
                "cost_usd": j.cost_usd,
                "created_at": iso(j.created_at),
            }
            for j in readings
        ],
    }


class TranscriptNotFoundError(NotFoundError):
    code = "TRANSCRIPT_NOT_FOUND"
