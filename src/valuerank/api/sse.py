"""A run's live feed (api/run_feed.py) as Server-Sent Events.

Each run message is sent as `id: <seq>` + `data: <json>`, in the same shape the progress
WebSocket sends (`{"type": "task_complete", "scenario_id", "model", "progress": "45/120",
"seq", …}`, see valuerank.runs.events); an `event: status` whenever the run's status changes,
a `: keepalive` comment when idle, and `event: end` once the run has ended and every event has
been sent. A client reconnecting with `Last-Event-ID` (browsers do it by themselves) resumes
after that sequence number and misses nothing.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from valuerank.api.listener import EventWaker
from valuerank.api.run_feed import run_feed

RETRY_MILLISECONDS = 2000


def format_sse(data: Any, *, event: str | None = None, id: int | None = None) -> str:
    """One SSE message; `data` is sent as one line of JSON."""
    lines = []
    if event is not None:
        lines.append(f"event: {event}")
    if id is not None:
        lines.append(f"id: {id}")
    lines.append("data: " + json.dumps(data, separators=(",", ":"), default=str))
    return "\n".join(lines) + "\n\n"


async def run_event_stream(
    waker: EventWaker, org_id: str, run_id: str, after: int, *, stop: asyncio.Event
) -> AsyncIterator[str]:
    """The SSE text of a run's messages after `after`, until the run ends or `stop` is set."""
    yield f"retry: {RETRY_MILLISECONDS}\n\n"
    async for item in run_feed(waker, org_id, run_id, after, stop=stop):
        if item.kind == "message":
            yield format_sse(item.data, id=int(item.data["seq"]))
        elif item.kind == "idle":
            yield ": keepalive\n\n"
        else:
            yield format_sse(item.data, event=item.kind)
