"""Events: per-partition sequence, written with the change, read with a cursor, NOTIFY on PG."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import psycopg
import pytest

from valuerank.queue import (
    EventType,
    Permanent,
    complete,
    events_after,
    pause_partition,
    settle_error,
)
from valuerank.queue.events import NOTIFY_CHANNEL, append_event, last_seq

if TYPE_CHECKING:
    from tests.queue.conftest import Kit


async def test_a_run_tells_its_story_in_order(kit: Kit) -> None:
    await kit.put(3, provider="scripted", model="m1")
    jobs = await kit.take(3)
    async with kit.db.transaction(immediate=True) as conn:
        await complete(conn, jobs[0].lease, 1, event_data={"scenario_id": "s-1"})
        await complete(conn, jobs[1].lease, 2)
    async with kit.db.transaction(immediate=True) as conn:
        await settle_error(conn, jobs[2], Permanent("refused"), settings=kit.settings)
    events = await kit.events()
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert [e.type for e in events] == [
        EventType.TASK_STARTED,
        EventType.TASK_STARTED,
        EventType.TASK_STARTED,
        EventType.TASK_COMPLETE,
        EventType.TASK_COMPLETE,
        EventType.TASK_FAILED,
        EventType.PARTITION_COMPLETE,
    ]
    first_done = events[3].data
    assert first_done["scenario_id"] == "s-1" and first_done["model"] == "m1"
    assert first_done["progress"] == "1/3" and first_done["job_id"] == jobs[0].id
    assert events[4].data["progress"] == "2/3"
    assert events[5].data["progress"] == "3/3"
    assert events[5].data["error"] == "permanent: Permanent: refused"
    assert events[6].data["counts"]["succeeded"] == 2
    assert all(e.org_id == kit.org_id for e in events)


async def test_the_cursor_resumes_where_it_stopped(kit: Kit) -> None:
    async with kit.db.transaction(immediate=True) as conn:
        for n in range(7):
            seq = await append_event(
                conn,
                org_id=kit.org_id,
                partition="p",
                type=EventType.PARTITION_PAUSED,
                data={"n": n},
            )
            assert seq == n + 1
        await append_event(conn, org_id=kit.org_id, partition="q", type=EventType.PARTITION_PAUSED)
        assert await last_seq(conn, "p") == 7
        assert await last_seq(conn, "nowhere") == 0
        page1 = await events_after(conn, "p", 0, limit=3)
        page2 = await events_after(conn, "p", page1[-1].seq, limit=3)
        page3 = await events_after(conn, "p", page2[-1].seq, limit=3)
        assert await events_after(conn, "p", page3[-1].seq) == []
        assert await events_after(conn, "p", 0, org_id="someone-else") == []
    assert [e.data["n"] for e in page1 + page2 + page3] == list(range(7))


async def test_events_of_a_rolled_back_change_never_appear(kit: Kit) -> None:
    await kit.put()
    with pytest.raises(RuntimeError):
        async with kit.db.transaction(immediate=True) as conn:
            await pause_partition(conn, kit.org_id, "run-1")
            raise RuntimeError("abort")
    assert await kit.events() == []
    assert len(await kit.take()) == 1  # and the pause did not happen either


async def test_concurrent_writers_get_distinct_sequence_numbers(kit: Kit) -> None:
    async def writer(n: int) -> None:
        for _ in range(5):
            async with kit.db.transaction(immediate=True) as conn:
                await append_event(
                    conn, org_id=kit.org_id, partition="busy", type=EventType.PARTITION_RESUMED
                )

    await asyncio.gather(*(writer(n) for n in range(6)))
    events = await kit.events("busy")
    assert [e.seq for e in events] == list(range(1, 31))


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)  # LISTEN/NOTIFY
async def test_postgresql_notifies_listeners_at_commit(kit: Kit) -> None:
    dsn = kit.db.url.url.set(drivername="postgresql").render_as_string(hide_password=False)
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as listener:
        await listener.execute(f"LISTEN {NOTIFY_CHANNEL}")
        # Tests in other processes share the database, so their notices may arrive first.
        partition = f"run-{kit.org_id}"
        async with kit.db.transaction() as conn:
            await append_event(
                conn, org_id=kit.org_id, partition=partition, type=EventType.PARTITION_PAUSED
            )
        notice = await asyncio.wait_for(first_notice_of(listener, partition), timeout=5)
    assert notice.channel == NOTIFY_CHANNEL and notice.payload == partition


async def first_notice_of(listener: psycopg.AsyncConnection[Any], payload: str) -> psycopg.Notify:
    async for notice in listener.notifies():
        if notice.payload == payload:
            return notice
    raise AssertionError("the listener stopped")
