"""The orders of the transcript list and their keyset positions: a page, its cursor and a
transcript's previous and next neighbours all use the same order, so a cursor stays right
while transcripts are added and "next" on a transcript is the row after it in its list.

Every order ends in (`created_at`, `id`), which makes it total; the lead column of a sort by
decision, model or scenario comes first (ascending; no decision sorts after 5), ties newest
first. A position is the transcript's values of those columns (`sort_key`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import and_, func, literal, or_, tuple_
from sqlalchemy.sql.elements import ColumnElement

from valuerank.db.tables import transcripts
from valuerank.errors import InvalidInputError
from valuerank.queue.dialect import to_db

NO_DECISION = 6  # where a transcript without a decision sorts by decision: after 5


class TranscriptSort(StrEnum):
    NEWEST = "newest"
    OLDEST = "oldest"
    DECISION = "decision"
    MODEL = "model"
    SCENARIO = "scenario"


SORT_LABELS = {
    TranscriptSort.NEWEST: "newest first",
    TranscriptSort.OLDEST: "oldest first",
    TranscriptSort.DECISION: "by decision (1 to 5)",
    TranscriptSort.MODEL: "by model",
    TranscriptSort.SCENARIO: "by scenario",
}


@dataclass(frozen=True)
class _Term:
    name: str  # what the key holds: "lead", "created_at" or "id"
    column: ColumnElement[Any]
    descending: bool


def _lead(sort: TranscriptSort) -> ColumnElement[Any] | None:
    if sort is TranscriptSort.DECISION:
        return func.coalesce(transcripts.c.decision_code, literal(NO_DECISION))
    if sort is TranscriptSort.MODEL:
        return transcripts.c.model
    if sort is TranscriptSort.SCENARIO:
        return transcripts.c.scenario_id
    return None


def key_names(sort: TranscriptSort) -> list[str]:
    """What a position in `sort` holds, in order: "lead" (when the sort has one), "created_at"
    (ISO-8601) and "id"."""
    return [t.name for t in _terms(sort)]


def _terms(sort: TranscriptSort) -> list[_Term]:
    ascending = sort is TranscriptSort.OLDEST
    lead = _lead(sort)
    return [
        *([] if lead is None else [_Term("lead", lead, False)]),
        _Term("created_at", transcripts.c.created_at, not ascending),
        _Term("id", transcripts.c.id, not ascending),
    ]


def order_by(sort: TranscriptSort, *, reverse: bool = False) -> list[ColumnElement[Any]]:
    """The ORDER BY of `sort` (the other way round with `reverse`)."""
    return [t.column.desc() if t.descending != reverse else t.column.asc() for t in _terms(sort)]


def sort_key(sort: TranscriptSort, item: Mapping[str, Any]) -> list[Any]:
    """A listed transcript's position in `sort` (a summary: `created_at` ISO-8601)."""
    values: dict[str, Any] = {"created_at": item["created_at"], "id": item["id"]}
    if sort is TranscriptSort.DECISION:
        code = item["decision_code"]
        values["lead"] = NO_DECISION if code is None else code
    elif sort is TranscriptSort.MODEL:
        values["lead"] = item["model"]
    elif sort is TranscriptSort.SCENARIO:
        values["lead"] = item["scenario_id"]
    return [values[t.name] for t in _terms(sort)]


def beyond(
    sort: TranscriptSort, key: Sequence[Any], dialect: str, *, reverse: bool = False
) -> ColumnElement[bool]:
    """The rows after the one at `key` in `sort` (before it with `reverse`)."""
    bounds = []
    for term, value in zip(_terms(sort), key, strict=True):
        column: Any = term.column
        bound: Any = value
        if term.name == "created_at":
            try:
                bound = to_db(dialect, datetime.fromisoformat(value))
            except (TypeError, ValueError):
                raise InvalidInputError("the position holds no time", hint="omit cursor") from None
            if dialect == "sqlite":  # stored text may differ in its fraction digits
                column, bound = func.julianday(column), func.julianday(bound)
        bounds.append((column, bound, term.descending != reverse))
    directions = {descending for _, _, descending in bounds}
    if dialect == "postgresql" and len(directions) == 1:
        # One direction: a row comparison, which PostgreSQL reads as a range of an index on
        # (…, created_at, id) instead of filtering the index's rows one by one.
        columns, values = tuple_(*(c for c, _, _ in bounds)), tuple_(*(b for _, b, _ in bounds))
        return columns < values if directions == {True} else columns > values
    alternatives = []
    for i, (column, bound, descending) in enumerate(bounds):
        equal = [c == b for c, b, _ in bounds[:i]]
        alternatives.append(and_(*equal, column < bound if descending else column > bound))
    return or_(*alternatives)
