"""Newest-first keyset pages over tables (or subqueries) with `created_at` and `id` (the API's
cursors)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import FromClause, Select, and_, func, or_

from valuerank.errors import InvalidInputError
from valuerank.queue.dialect import to_db


def newest_first(
    query: Select[Any], table: FromClause, dialect: str, limit: int, after: tuple[str, str] | None
) -> Select[Any]:
    """`query` ordered newest first, after the item (`created_at` ISO-8601, `id`) when given,
    `limit + 1` rows (the extra one says there is a next page)."""
    if after is not None:
        try:
            created = to_db(dialect, datetime.fromisoformat(after[0]))
        except (TypeError, ValueError):
            raise InvalidInputError("the cursor does not hold a time", hint="omit cursor") from None
        column: Any = table.c.created_at
        bound: Any = created
        if dialect == "sqlite":  # stored text may differ in its fraction digits: compare days
            column, bound = func.julianday(column), func.julianday(created)
        query = query.where(or_(column < bound, and_(column == bound, table.c.id < after[1])))
    return query.order_by(table.c.created_at.desc(), table.c.id.desc()).limit(limit + 1)
