"""One run's live feed, shared by its Server-Sent Events and its progress WebSocket: the run
messages of valuerank.runs.events after a cursor, then live ones as they are written, until
the run has ended.

Each pass reads the run's status and activity first and its events second (an event written
after the run ended is then still read by this pass or the next), and waits on the process's
event listener in between (PostgreSQL: woken by NOTIFY at once; SQLite: a short poll). The
feed ends once the run is terminal, nothing of it is queued or running, and every event has
been read.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.api.listener import EventWaker
from valuerank.errors import NotFoundError
from valuerank.queue.partitions import has_live_jobs
from valuerank.runs.events import RunEventReader
from valuerank.runs.service import get_run

log = logging.getLogger("valuerank.api")

BATCH = 200
IDLE_SECONDS = 15.0  # an `idle` item after this long without anything to say (keepalives)

Kind = Literal["message", "status", "end", "idle"]


@dataclass(frozen=True)
class FeedItem:
    """`message`: a run message; `status`: the run's status changed ({"status"}); `end`:
    the last item ({"status", "last_seq", "progress"}; status "deleted" when the run went
    away); `idle`: nothing happened for a while."""

    kind: Kind
    data: dict[str, Any]


async def has_active_jobs(conn: AsyncConnection, run_id: str) -> bool:
    """Whether a job of the run is queued or running (read from the jobs, not counters)."""
    return await has_live_jobs(conn, run_id)


async def run_feed(
    waker: EventWaker, org_id: str, run_id: str, after: int, *, stop: asyncio.Event
) -> AsyncIterator[FeedItem]:
    """The feed of the run `run_id` (already checked to be the organisation's) after `after`,
    until it ends or `stop` is set."""
    db = waker.db
    reader: RunEventReader | None = None
    status: str | None = None
    last_write = time.monotonic()
    with waker.subscribe(run_id) as wakeup:
        while not stop.is_set():
            wakeup.arm()
            try:
                async with db.transaction() as conn:
                    run = await get_run(conn, org_id, run_id)
                    active = await has_active_jobs(conn, run.id)
                    if reader is None:
                        reader = await RunEventReader.open(conn, run, after)
                    messages, read = await reader.read(conn, BATCH)
            except NotFoundError:
                cursor = after if reader is None else reader.cursor
                yield FeedItem("end", {"status": "deleted", "last_seq": cursor})
                return
            except (OperationalError, DBAPIError) as exc:
                log.warning("feed of run %s: database error, retrying: %s", run_id, exc)
                await wakeup.wait(stop, timeout=waker.poll_seconds * 4)
                continue
            assert reader is not None  # made by the read above
            if run.status.value != status:
                status = run.status.value
                yield FeedItem("status", {"status": status})
                last_write = time.monotonic()
            for message in messages:
                yield FeedItem("message", message)
            if messages:
                last_write = time.monotonic()
            if read:
                if read == BATCH or run.status.terminal:
                    continue  # more to read, or look once more before ending
            elif run.status.terminal and not active:
                end = {"status": status, "last_seq": reader.cursor, **reader.tally.fields()}
                yield FeedItem("end", end)
                return
            if time.monotonic() - last_write >= IDLE_SECONDS:
                yield FeedItem("idle", {})
                last_write = time.monotonic()
            await wakeup.wait(stop, timeout=min(waker.poll_seconds, IDLE_SECONDS))
