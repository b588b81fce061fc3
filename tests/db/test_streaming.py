"""Reading a result in batches (SQLite and PostgreSQL): every row once, in order, in batches
of the size asked; a reader that stops early leaves the connection usable."""

from __future__ import annotations

from sqlalchemy import func, insert, select

from valuerank.db import Database
from valuerank.db.streaming import stream_batches, stream_rows
from valuerank.db.tables import orgs


async def test_batches_cover_every_row_once_in_order(db: Database) -> None:
    async with db.transaction() as conn:
        await conn.execute(insert(orgs), some_orgs(23))
    query = select(orgs.c.id).where(orgs.c.id.like("org-%")).order_by(orgs.c.id)
    async with db.transaction() as conn:
        sizes = [len(rows) async for rows in stream_batches(conn, query, batch=5)]
        ids = [row.id async for row in stream_rows(conn, query, batch=5)]
    assert sizes == [5, 5, 5, 5, 3]
    assert ids == [f"org-{n:03d}" for n in range(23)]


async def test_a_reader_that_stops_early_leaves_the_connection_usable(db: Database) -> None:
    async with db.transaction() as conn:
        await conn.execute(insert(orgs), some_orgs(12))
        query = select(orgs.c.id).where(orgs.c.id.like("org-%")).order_by(orgs.c.id)
        async for row in stream_rows(conn, query, batch=4):
            if row.id == "org-005":
                break
        # The cursor was closed: the same connection runs the next statement.
        count = await conn.scalar(select(func.count()).where(orgs.c.id.like("org-%")))
    assert count == 12


def some_orgs(count: int) -> list[dict[str, str]]:
    return [{"id": f"org-{n:03d}", "slug": f"org-{n:03d}", "name": "o"} for n in range(count)]
