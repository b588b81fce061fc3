"""The process's event listener (api/listener.py) on PostgreSQL: with the streams' safety-net
poll set to 5 minutes, an event still reaches a progress WebSocket, a run's SSE stream and
/ws/updates within FAST_ENOUGH (LISTEN/NOTIFY woke them), also after the listener's
connection was killed (it reconnects). On SQLite the streams poll (tests of the routes)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import psycopg
import pytest
from tests.waiting import wait_until_async
from websockets.asyncio.client import connect

from valuerank.db import Database
from valuerank.runs import service
from valuerank.validation.events import VALIDATION_ADDED, publish

from .conftest import TOKEN

pytestmark = pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)

# A NOTIFY wakes a stream in milliseconds; FAST_ENOUGH holds at load 10 too. The poll is ten
# times as long: an event that arrives within FAST_ENOUGH can only have come by NOTIFY.
FAST_ENOUGH = 30.0
POLL = 10 * FAST_ENOUGH


def _headers() -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}"}


async def _recv(ws: Any, timeout: float) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), timeout))
    return message


async def _pause(db: Database, org_id: str, run_id: str, paused: bool) -> float:
    async with db.transaction(immediate=True) as conn:
        await (service.pause_run if paused else service.resume_run)(conn, org_id, run_id)
    return time.monotonic()


async def _streams_waiting(waker: Any, count: int) -> None:
    """Until `count` streams are subscribed and none has a wake-up left unserved: each has
    armed its subscription before reading, so a NOTIFY from now on can only reach it by
    waking it (the set of subscriptions is the listener's own: nothing else shows it)."""

    def waiting() -> bool:
        subscriptions = list(waker._subscriptions)
        return len(subscriptions) == count and not any(s.woken.is_set() for s in subscriptions)

    await wait_until_async(waiting, what=f"{count} streams waiting on the listener")


async def test_notify_wakes_streams_long_before_the_poll(
    live: Any, db: Database, org_id: str, make_run: Any, sse_messages: Any
) -> None:
    waker = live.context.waker
    waker.poll_seconds = POLL
    run = await make_run(org_id)
    async with db.transaction(immediate=True) as conn:
        await service.start_run(conn, org_id, run.id)
    ws_base = live.url.replace("http://", "ws://")
    progress = connect(f"{ws_base}/api/runs/{run.id}/progress", additional_headers=_headers())
    updates = connect(f"{ws_base}/ws/updates", additional_headers=_headers())
    async with progress as ws, updates as up, live.client() as client:
        assert (await _recv(ws, 10))["type"] == "subscribed"
        assert (await _recv(up, 10))["type"] == "subscribed"
        await asyncio.wait_for(waker.connected.wait(), 10)
        await _streams_waiting(waker, 2)  # they have read once and wait now (long poll)

        written = await _pause(db, org_id, run.id, True)
        message = await _recv(ws, FAST_ENOUGH)
        assert message["type"] == "run_paused"
        assert time.monotonic() - written < FAST_ENOUGH

        async with db.transaction() as conn:
            await publish(conn, org_id, VALIDATION_ADDED, {"task_id": "1"}, {"action": "x"})
        written = time.monotonic()
        update = await _recv(up, FAST_ENOUGH)
        assert update["type"] == VALIDATION_ADDED
        assert time.monotonic() - written < FAST_ENOUGH

        # Kill the listener's connection: it reconnects and streams are woken again.
        old_pid = waker.backend_pid
        assert old_pid is not None
        dsn = db.url.url.set(drivername="postgresql").render_as_string(hide_password=False)
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as admin:
            await admin.execute("SELECT pg_terminate_backend(%s)", (old_pid,))

        async def reconnected() -> bool:
            return waker.backend_pid not in (None, old_pid)

        await wait_until_async(reconnected, what="the listener to reconnect")
        await _streams_waiting(waker, 2)  # the wake-up of the reconnect has been served
        written = await _pause(db, org_id, run.id, False)
        assert (await _recv(ws, FAST_ENOUGH))["type"] == "run_resumed"
        assert time.monotonic() - written < FAST_ENOUGH

        # The SSE stream waits on the same listener.
        url = f"/api/runs/{run.id}/events/stream"
        async with client.stream("GET", url, params={"after": 2}) as response:
            messages = sse_messages(response)
            assert (await asyncio.wait_for(anext(messages), 10))["event"] == "status"
            await _streams_waiting(waker, 3)
            written = await _pause(db, org_id, run.id, True)
            async with asyncio.timeout(FAST_ENOUGH):
                seen = [await anext(messages), await anext(messages)]
            assert seen[0] == {"event": "status", "data": {"status": "paused"}}
            assert seen[1]["data"]["type"] == "run_paused" and seen[1]["id"] == "3"
            assert time.monotonic() - written < FAST_ENOUGH
