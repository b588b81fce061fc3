"""Reading transcripts: filtered and searched lists (newest first, keyset pages) and one
transcript verbatim with its judgments.

Text search is a substring match over the stored markdown, case-insensitive for ASCII letters
and exact for every other character, written so SQLite and PostgreSQL find the same
transcripts: SQLite's `lower()` and `LIKE` fold ASCII only, so PostgreSQL folds with
`translate()` over A–Z instead of its Unicode-aware `lower()`/`ILIKE`.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from valuerank.db.tables import judgments, transcripts
from valuerank.errors import InvalidInputError, NotFoundError
from valuerank.findings.keyset import newest_first
from valuerank.queue.dialect import iso
from valuerank.runs.service import get_run

_FOLD = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_ESCAPE = "\\"
MAX_QUERY_LENGTH = 200

# Everything but the text itself: what a list shows of each transcript.
_SUMMARY = [c for c in transcripts.c if c.name not in ("content", "turns")]


@dataclass(frozen=True)
class TranscriptFilter:
    """Which transcripts to list; None: any. `run` is a run id or unique prefix."""

    run: str | None = None
    model: str | None = None
    scenario_id: str | None = None
    decision_code: int | None = None
    text: str | None = None  # a substring of the transcript (see the module's note)


def _refuse_nul(**values: str | None) -> None:
    """PostgreSQL stores no NUL character; one in a filter is a bad request on both."""
    for name, value in values.items():
        if value is not None and "\x00" in value:
            raise InvalidInputError(f"{name} contains a NUL character")


def like_pattern(text: str) -> str:
    """`%text%` with LIKE's wildcards escaped, ASCII letters folded to lower case."""
    escaped = "".join(_ESCAPE + ch if ch in "%_\\" else ch for ch in text.translate(_FOLD))
    return f"%{escaped}%"


def _folded(dialect: str) -> ColumnElement[str]:
    if dialect == "postgresql":
        return func.translate(transcripts.c.content, string.ascii_uppercase, string.ascii_lowercase)
    return func.lower(transcripts.c.content)


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


async def _query(conn: AsyncConnection, org_id: str, filters: TranscriptFilter) -> Select[Any]:
    _refuse_nul(
        run=filters.run, model=filters.model, scenario_id=filters.scenario_id, q=filters.text
    )
    query = select(*_SUMMARY).where(transcripts.c.org_id == org_id)
    if filters.run is not None:
        run = await get_run(conn, org_id, filters.run)  # 404 for an unknown or foreign run
        query = query.where(transcripts.c.run_id == run.id)
    if filters.model is not None:
        query = query.where(transcripts.c.model == filters.model)
    if filters.scenario_id is not None:
        query = query.where(transcripts.c.scenario_id == filters.scenario_id)
    if filters.decision_code is not None:
        query = query.where(transcripts.c.decision_code == filters.decision_code)
    if filters.text:
        if len(filters.text) > MAX_QUERY_LENGTH:
            raise InvalidInputError(f"q is longer than {MAX_QUERY_LENGTH} characters")
        folded = _folded(conn.dialect.name)
        query = query.where(folded.like(like_pattern(filters.text), escape=_ESCAPE))
    return query


async def list_transcripts(
    conn: AsyncConnection,
    org_id: str,
    filters: TranscriptFilter | None = None,
    *,
    limit: int = 50,
    after: tuple[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Up to `limit + 1` transcripts newest first (the extra one says a next page exists),
    after the one whose (`created_at` ISO-8601, `id`) is `after`; without their text."""
    query = await _query(conn, org_id, filters or TranscriptFilter())
    dialect = conn.dialect.name
    rows = await conn.execute(newest_first(query, transcripts, dialect, limit, after))
    return [summary_dict(row) for row in rows]


async def get_transcript(conn: AsyncConnection, org_id: str, transcript_id: str) -> dict[str, Any]:
    """One transcript of the organisation: its markdown verbatim, its turns, its metadata and
    every judge's reading. Another organisation's is not found, like an unknown one."""
    row = None
    if "\x00" not in transcript_id:  # no id holds one (and PostgreSQL refuses it)
        row = (
            await conn.execute(
                select(transcripts).where(
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
    return {
        **summary_dict(row),
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
