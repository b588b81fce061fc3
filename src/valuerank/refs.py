"""Rows named by their id, a unique id prefix (as in Git) or a unique id suffix (the short id).

Ids are UUIDv7: time first, so two rows made within a minute share their first 8 characters,
and a prefix shown as a short id would name several. The last characters are random, so the
short id everywhere (CLI, web, report) is the id's last `SHORT_ID_LENGTH` characters, and every
command and route accepts it. An ambiguous reference answers AMBIGUOUS_ID naming the candidates.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Row, Select, Table, select
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from valuerank.errors import AmbiguousIdError, NotFoundError

MIN_ID_PREFIX = 4
SHORT_ID_LENGTH = 8
# Candidates named by an AMBIGUOUS_ID error.
_SHOWN_CANDIDATES = 5


def short_id(full_id: str) -> str:
    """The id as people see it: its random tail, which every reference accepts."""
    return full_id[-SHORT_ID_LENGTH:]


async def find_by_ref(
    conn: AsyncConnection, table: Table, org_id: str, ref: str, *, kind: str, listing: str
) -> Row[Any]:
    """The organisation's row whose id is `ref` or starts with it; another org's is not found."""
    query = select(table).where(table.c.org_id == org_id)
    return await first_by_ref(conn, query, table.c.id, ref, kind=kind, listing=listing)


async def first_by_ref(
    conn: AsyncConnection,
    query: Select[Any],
    id_column: ColumnElement[Any],
    ref: str,
    *,
    kind: str,
    listing: str,
) -> Row[Any]:
    """The row of `query` (already scoped by its caller) whose `id_column` is `ref`, or the one
    row whose id starts or ends with it; NOT_FOUND or AMBIGUOUS_ID otherwise. `listing` names
    the collection (`runs`): the hint says how to list it from the CLI and from the API."""
    ref = ref.strip()
    if "\x00" in ref:  # no id holds one, and PostgreSQL refuses it in any string
        raise _not_found(kind, ref, listing)
    row = (await conn.execute(query.where(id_column == ref))).first()
    if row is not None:
        return row
    if len(ref) >= MIN_ID_PREFIX:
        matches = id_column.startswith(ref, autoescape=True) | id_column.endswith(
            ref, autoescape=True
        )
        rows = (await conn.execute(query.where(matches).limit(_SHOWN_CANDIDATES + 1))).all()
        if len(rows) == 1:
            return rows[0]
        if len(rows) > 1:
            ids = sorted(str(row._mapping[id_column]) for row in rows[:_SHOWN_CANDIDATES])
            more = ", …" if len(rows) > _SHOWN_CANDIDATES else ""
            raise AmbiguousIdError(
                f"{kind} id {ref!r} matches several: {', '.join(ids)}{more}",
                hint="give more characters of the id (or the whole id)",
            )
    raise _not_found(kind, ref, listing)


def _not_found(kind: str, ref: str, listing: str) -> NotFoundError:
    # The same words serve the CLI and the API (and the CLI passes a server's on).
    return NotFoundError(
        f"no {kind} with id {ref!r}",
        hint=f"list them with `valuerank {listing} list` or GET /api/{listing}",
    )
