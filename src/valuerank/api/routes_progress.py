"""WebSocket /api/runs/{run_id}/progress: one run's live progress, as the seed names it.

    → {"type": "subscribed", "run_id", "after"}
    → {"type": "task_complete", "scenario_id", "model", "progress": "45/120", "seq", …}
    → {"type": "task_failed", "scenario_id", "model", "error", "progress", "seq", …}
    → {"type": "run_complete", "status", "progress", "seq", …}, then a normal close (1000)

(and `run_paused` / `run_resumed` / `run_cancelled`; see valuerank.runs.events). The same
messages as the run's Server-Sent Events. `?after=SEQ` replays every message after SEQ, then
goes live (a reconnecting client passes the last `seq` it saw and misses nothing); without
it, the run from its first event.

Credentials as every WebSocket (a Bearer token, or the session cookie from the same origin);
none, or a weaker role than viewer: refused at the handshake (HTTP 403). Another
organisation's run, like an unknown one: closed with 4404 and the reason; a bad `after`:
closed with 1008. The server stopping closes with 1001.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from valuerank.api.deps import Viewer
from valuerank.api.fields import sequence_number
from valuerank.api.run_feed import run_feed
from valuerank.errors import NotFoundError
from valuerank.runs.event_names import RUN_COMPLETE
from valuerank.runs.service import get_run

NORMAL = 1000
GOING_AWAY = 1001
POLICY_VIOLATION = 1008
NOT_FOUND = 4404  # 4000–4999: the application's own close codes; 404 as in HTTP

router = APIRouter(tags=["progress"])


def parse_after(text: str | None) -> int:
    """`?after=` as a sequence number ≥ 0 (0 when absent); ValueError if it is not one."""
    if text is None:
        return 0
    return sequence_number(text)


async def _stream(websocket: WebSocket, ctx: Viewer, run_id: str, after: int) -> int:
    """Send the run's feed; returns the close code."""
    sent_end = False
    async for item in run_feed(ctx.app.waker, ctx.org_id, run_id, after, stop=ctx.stopping):
        if item.kind == "message":
            await websocket.send_json(item.data)
            sent_end = item.data["type"] == RUN_COMPLETE
        elif item.kind == "end":
            if item.data["status"] == "deleted":
                return NOT_FOUND
            if not sent_end:  # a run that ended without one (cancelled before it ran)
                end: dict[str, Any] = {"type": RUN_COMPLETE, "seq": item.data["last_seq"]}
                end.update({k: v for k, v in item.data.items() if k != "last_seq"})
                await websocket.send_json(end)
            return NORMAL
    return GOING_AWAY  # the server is stopping


@router.websocket("/api/runs/{run_id}/progress")
async def run_progress_socket(websocket: WebSocket, run_id: str, ctx: Viewer) -> None:
    """Live progress of a run: task_complete / task_failed per probe with the run's progress,
    then run_complete and a normal close. `?after=SEQ` resumes after a sequence number."""
    await websocket.accept()  # then close with a code, so that the client reads why
    try:
        after = parse_after(websocket.query_params.get("after"))
    except ValueError as exc:
        await websocket.close(code=POLICY_VIOLATION, reason=str(exc))
        return
    try:
        async with ctx.db.transaction() as conn:
            run = await get_run(conn, ctx.org_id, run_id)
    except NotFoundError as exc:
        await websocket.close(code=NOT_FOUND, reason=exc.message[:120])
        return
    await websocket.send_json({"type": "subscribed", "run_id": run.id, "after": after})
    sender = asyncio.create_task(_stream(websocket, ctx, run.id, after))
    receiver = asyncio.create_task(websocket.receive())  # to notice the client leaving
    try:
        while True:
            done, _ = await asyncio.wait({sender, receiver}, return_when=asyncio.FIRST_COMPLETED)
            if sender in done:
                code = sender.result()
                reason = "run not found" if code == NOT_FOUND else ""
                await websocket.close(code=code, reason=reason)
                return
            if receiver.result().get("type") == "websocket.disconnect":
                return
            receiver = asyncio.create_task(websocket.receive())  # messages are ignored
    except (WebSocketDisconnect, RuntimeError, OSError):
        return  # the client went away mid-send
    finally:
        for task in (sender, receiver):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
