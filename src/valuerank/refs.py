"""Rows named by their id or a unique id prefix (at least 4 characters), as in Git."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Row, Select, Table, select
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from valuerank.errors import AmbiguousIdError, NotFoundError

MIN_ID_PREFIX = 4


async def find_by_ref(
    conn: AsyncConnection, table: Table, org_id: str, ref: str, *, kind: str, list_hint: str
) -> Row[Any]:
    """The organisation's row whose id is `ref` or starts with it; another org's is not found."""
    query = select(table).where(table.c.org_id == org_id)
    return await first_by_ref(conn, query, table.c.id, ref, kind=kind, list_hint=list_hint)


async def first_by_ref(
    conn: AsyncConnection,
    query: Select[Any],
    id_column: ColumnElement[Any],
    ref: str,
    *,
    kind: str,
    list_hint: str,
) -> Row[Any]:
    """The row of `query` (already scoped by its caller) whose `id_column` is `ref` or the one
    row starting with it; NOT_FOUND or AMBIGUOUS_ID otherwise."""
    ref = ref.strip()
    if "\x00" in ref:  # no id holds one, and PostgreSQL refuses it in any string
        raise NotFoundError(f"no {kind} with id {ref!r}", hint=f"list them with `{list_hint}`")
    row = (await conn.execute(query.where(id_column == ref))).first()
    if row is not None:
        return row
    if len(ref) >= MIN_ID_PREFIX:
        rows = (
            await conn.execute(query.where(id_column.startswith(ref, autoescape=True)).limit(2))
        ).all()
        if len(rows) == 1:
            return rows[0]
        if len(rows) > 1:
            raise AmbiguousIdError(
                f"{kind} id prefix {ref!r} matches several", hint="give more characters of the id"
            )
    raise NotFoundError(f"no {kind} with id {ref!r}", hint=f"list them with `{list_hint}`")
