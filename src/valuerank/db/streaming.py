"""Reading a big result a batch at a time (a server-side cursor on PostgreSQL), so memory
stays independent of how many rows a run has."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from sqlalchemy import Row, Select
from sqlalchemy.ext.asyncio import AsyncConnection

BATCH = 2000


async def stream_batches(
    conn: AsyncConnection, query: Select[Any], batch: int = BATCH
) -> AsyncIterator[Sequence[Row[Any]]]:
    """The rows of `query`, `batch` at a time; the cursor is closed however the caller stops."""
    result = await conn.stream(query.execution_options(yield_per=batch))
    try:
        async for rows in result.partitions(batch):
            yield rows
    finally:
        await result.close()


async def stream_rows(
    conn: AsyncConnection, query: Select[Any], batch: int = BATCH
) -> AsyncIterator[Row[Any]]:
    """The rows of `query` one by one, read `batch` at a time."""
    async for rows in stream_batches(conn, query, batch):
        for row in rows:
            yield row
