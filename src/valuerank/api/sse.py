"""A run's live feed (api/run_feed.py) as Server-Sent Events.

Each run message is sent as `id: <seq>` + `data: <json>`, in the same shape the progress
WebSocket sends (`{"type": "task_complete", "scenario_id", "model", "progress": "45/120",
"seq", …}`, see valuerank.runs.events); an `event: status` whenever the run's status changes,
a `: keepalive` comment when idle, and `event: end` once the run has ended and every event has
been sent. A client reconnecting with `Last-Event-ID` (browsers do it by themselves) resumes
after that sequence number and misses nothing.

With `snapshots` (the run page's stream), an `event: snapshot` also carries the run as
`GET /api/runs/{id}` gives it (`run`), its `breakdown` as `GET /api/runs/{id}/breakdown` does,
and `sections`: a key of what the page's server-rendered sections show (`sections_key`), so
that the page fetches them only when it changed. One is sent on connecting, then at most one a
second while events arrive (debounced here: a busy run writes many), every few seconds while
the run is open even without events (judging and the ETA move without any) when it changed,
and always one last before `end`. A stream is thus the page's only need while it works.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import math
import time
from collections.abc import AsyncIterator
from typing import Any

from sqlalchemy.exc import DBAPIError, OperationalError

from valuerank.api.listener import EventWaker
from valuerank.api.run_feed import FeedItem, run_feed
from valuerank.api.views import RunDetail, load_run
from valuerank.errors import NotFoundError
from valuerank.runs.breakdown import count_failures, run_breakdown
from valuerank.runs.states import RunStatus
from valuerank.shapes import dump

log = logging.getLogger("valuerank.api")

RETRY_MILLISECONDS = 2000
SNAPSHOT_SECONDS = 1.0  # at most one snapshot a second while events arrive
REFRESH_SECONDS = 5.0  # an open run's snapshot is looked at this often without events


def format_sse(data: Any, *, event: str | None = None, id: int | None = None) -> str:
    """One SSE message; `data` is sent as one line of JSON."""
    lines = []
    if event is not None:
        lines.append(f"event: {event}")
    if id is not None:
        lines.append(f"id: {id}")
    lines.append("data: " + json.dumps(data, separators=(",", ":"), default=str))
    return "\n".join(lines) + "\n\n"


def sections_key(detail: RunDetail, failed: int) -> str:
    """A short digest of what a run page's sections (web/templates/run_sections.html) are
    drawn from: the results per model, the failed jobs, the sample, the summary and whether
    the run ended. Equal keys: the same sections."""
    run = detail.run
    drawn = [
        dump(detail.results),
        failed,
        run.config.sample_percentage,
        run.summary,
        run.status.terminal,
    ]
    text = json.dumps(drawn, separators=(",", ":"), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


async def load_snapshot(waker: EventWaker, org_id: str, run_id: str) -> dict[str, Any]:
    """The run, its breakdown and its sections key, as the page draws them."""
    detail = await load_run(waker.db, org_id, run_id)
    async with waker.db.transaction() as conn:
        breakdown = await run_breakdown(conn, detail.run)
        failed = await count_failures(conn, detail.run)
    return {
        "run": dump(detail),
        "breakdown": dump(breakdown),
        "sections": sections_key(detail, failed),
    }


def _item_text(item: FeedItem) -> str:
    if item.kind == "message":
        return format_sse(item.data, id=int(item.data["seq"]))
    if item.kind == "idle":
        return ": keepalive\n\n"
    return format_sse(item.data, event=item.kind)


async def run_event_stream(
    waker: EventWaker,
    org_id: str,
    run_id: str,
    after: int,
    *,
    stop: asyncio.Event,
    snapshots: bool = False,
) -> AsyncIterator[str]:
    """The SSE text of a run's messages after `after`, until the run ends or `stop` is set;
    with `snapshots`, the run's snapshots among them."""
    yield f"retry: {RETRY_MILLISECONDS}\n\n"
    if not snapshots:
        async for item in run_feed(waker, org_id, run_id, after, stop=stop):
            yield _item_text(item)
        return
    async for text in _with_snapshots(waker, org_id, run_id, after, stop):
        yield text


async def _with_snapshots(
    waker: EventWaker, org_id: str, run_id: str, after: int, stop: asyncio.Event
) -> AsyncIterator[str]:
    # The feed runs in a task of its own so that a due snapshot need not wait for its next
    # item (cancelling a generator mid-await would end it).
    items: asyncio.Queue[FeedItem | None] = asyncio.Queue()

    async def pump() -> None:
        try:
            async for item in run_feed(waker, org_id, run_id, after, stop=stop):
                items.put_nowait(item)
        finally:
            items.put_nowait(None)

    feeding = asyncio.create_task(pump())
    sent: str | None = None  # the last snapshot's JSON: an unchanged one is not sent again
    looked_at = -math.inf
    dirty = True  # the first snapshot goes out at once
    open_run = True

    async def snapshot(*, always: bool = False) -> str | None:
        nonlocal sent, looked_at, dirty
        looked_at, dirty = time.monotonic(), False
        try:
            data = await load_snapshot(waker, org_id, run_id)
        except NotFoundError:
            return None  # deleted: the feed says so with its `end`
        except (OperationalError, DBAPIError) as exc:
            log.warning("snapshot of run %s: database error, retrying: %s", run_id, exc)
            dirty = True
            return None
        text = json.dumps(data, separators=(",", ":"), default=str)
        if text == sent and not always:
            return None
        sent = text
        return f"event: snapshot\ndata: {text}\n\n"

    try:
        while True:
            wait = SNAPSHOT_SECONDS if dirty else REFRESH_SECONDS if open_run else math.inf
            due = looked_at + wait - time.monotonic()
            if due <= 0:
                text = await snapshot()
                if text is not None:
                    yield text
                continue
            try:
                item = await asyncio.wait_for(items.get(), None if math.isinf(due) else due)
            except TimeoutError:
                continue
            if item is None:
                await feeding  # the feed ended: raises what ended it, if it failed
                return
            if item.kind == "end":
                final = await snapshot(always=True)
                if final is not None:
                    yield final
            elif item.kind in ("message", "status"):
                dirty = True
                if item.kind == "status":
                    open_run = not RunStatus(item.data["status"]).terminal
            yield _item_text(item)
    finally:
        feeding.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await feeding
