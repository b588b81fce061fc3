"""On PostgreSQL a cached consensus read runs no query at all: the API process keeps each
task's head while triggers NOTIFY it of every change to a task (schema 0015); SQLite reads
the head every time."""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest
from sqlalchemy import event

from valuerank.db import Database

from .conftest import Live
from .test_assumptions_routes import JWT, _tag, _task

postgresql = pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
sqlite = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


def _count_statements(db: Database) -> tuple[list[str], Any]:
    seen: list[str] = []

    def note(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(statement)

    event.listen(db.engine.sync_engine, "before_cursor_execute", note)
    return seen, note


async def _reads(live: Live, client: Any, url: str, times: int) -> list[str]:
    """The statements `times` cached reads of `url` run."""
    seen, note = _count_statements(live.db)
    try:
        for _ in range(times):
            answer = (await client.get(url)).json()
            assert answer["cached"] is True
    finally:
        event.remove(live.db.engine.sync_engine, "before_cursor_execute", note)
    return seen


async def _first_read(client: Any) -> str:
    """A new task's tag, read once (a miss); its view's URL."""
    task_id = await _task(client)
    await _tag(client, task_id, "ra_1", JWT)
    url = f"/api/assumptions/multi-model/{task_id}/ra_1"
    assert (await client.get(url)).json()["cached"] is False
    return url


@postgresql
async def test_a_cached_read_runs_no_query(live: Live) -> None:
    async with live.client() as client:
        url = await _first_read(client)
        await asyncio.wait_for(live.context.waker.connected.wait(), 5)
        assert (await client.get(url)).json()["cached"] is True  # the head is kept now
        assert await _reads(live, client, url, 3) == []


@sqlite
async def test_sqlite_reads_the_head_every_time(live: Live) -> None:
    async with live.client() as client:
        statements = await _reads(live, client, await _first_read(client), 3)
    heads = [s for s in statements if s.lstrip().startswith("SELECT") and "validation_tasks" in s]
    assert len(heads) == 3


@postgresql
async def test_what_notifies_and_what_does_not(live: Live) -> None:
    async with live.client() as client:
        task_id = await _task(client)
    dsn = live.db.url.url.set(drivername="postgresql").render_as_string(hide_password=False)
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as listener:
        await listener.execute("LISTEN valuerank_validation")
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as other:
            await other.execute(
                "UPDATE validation_tasks SET description = 'no notice' WHERE id = %s",
                (task_id,),
            )
            await other.execute(
                "UPDATE validation_tasks SET version = version + 1 WHERE id = %s", (task_id,)
            )
            await other.execute("DELETE FROM validation_tasks WHERE id = %s", (task_id,))
        payloads = [n.payload async for n in listener.notifies(timeout=2.0, stop_after=2)]
    assert payloads == [str(task_id), str(task_id)]
