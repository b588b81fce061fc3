"""The shared LISTEN connection (db/listen.py) when it cannot listen: it keeps trying with
backoff, says so once per failure streak, never reports itself connected, and stops when
cancelled. (Listening, losing the connection and catching up: tests/api/test_listener.py and
tests/queue/test_wakeup.py.)"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import pytest
from tests.waiting import wait_until_async

from valuerank.db import create_database
from valuerank.db import listen as db_listen
from valuerank.db.listen import Listener


async def test_an_unreachable_server_is_retried_and_reported_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger=db_listen.__name__)
    db = create_database("postgresql://postgres@127.0.0.1:1/none")  # nothing listens on port 1
    connects: list[None] = []
    disconnects: list[None] = []
    listener = Listener(
        db,
        ["valuerank_listen_test"],
        name="test listener",
        on_notice=lambda notice: None,
        on_connect=lambda: connects.append(None),
        on_disconnect=lambda: disconnects.append(None),
        reconnect_seconds=(0.01, 0.05),  # many attempts, fast
    )
    task = asyncio.create_task(listener.run())
    try:
        await wait_until_async(lambda: listener.failures >= 5, what="five failed attempts")
        assert not task.done()  # it never gives up
        assert not listener.connected.is_set() and listener.backend_pid is None
        assert connects == [] and len(disconnects) >= 5
        warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(warnings) == 1 and "test listener" in warnings[0].getMessage()
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await db.dispose()
    assert task.cancelled()
