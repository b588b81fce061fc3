"""WebSocket /ws/updates: the organisation's live validation updates
(`multi_model.validation_added`, `multi_model.consensus_updated`; see
valuerank.validation.events), to its own clients only.

Connect with `?after=N` to receive every update with a sequence number above N (a client
that reconnects passes the last `seq` it saw and misses nothing); without it, updates from
now on. `?task_id=T` keeps one task's (another organisation's task, like an unknown one, is
closed with 4404 and the reason before anything is sent). The first message is
`{"type": "subscribed", "last_seq": …, "after": …}`; then each update as the seed shows it,
plus its `seq`. Updates are read from the database (so every API process sees every
worker's updates), woken by the process's event listener (api/listener.py: PostgreSQL's
NOTIFY at once; SQLite a short poll). A handshake without credentials is refused (HTTP 403); bad
parameters close the socket with 1008 (policy violation) and the reason; the server
stopping closes it with 1001.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from fastapi import APIRouter, WebSocket, WebSocketDisconnect
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.api.deps import Viewer
from valuerank.api.fields import sequence_number
from valuerank.api.routes_progress import NOT_FOUND
from valuerank.errors import NotFoundError, ValueRankError
from valuerank.validation.events import last_update_seq, updates_after, updates_partition
from valuerank.validation.model import parse_task_id
from valuerank.validation.store import get_task

log = logging.getLogger("valuerank.api")

BATCH = 200
POLICY_VIOLATION = 1008
GOING_AWAY = 1001

router = APIRouter(tags=["updates"])


def _params(websocket: WebSocket) -> tuple[int | None, str | None]:
    """`after` (a sequence number ≥ 0) and `task_id` from the query (ValueError if bad)."""
    query = websocket.query_params
    after_text = query.get("after")
    after = None if after_text is None else sequence_number(after_text)
    task = query.get("task_id")
    return after, None if task is None else str(parse_task_id(task))


async def _missing_task(conn: AsyncConnection, org_id: str, task_id: str | None) -> str | None:
    """Why `task_id` cannot be followed: another organisation's task, like an unknown one."""
    if task_id is None:
        return None
    try:
        await get_task(conn, org_id, int(task_id))
    except NotFoundError as exc:
        return exc.message
    return None


@router.websocket("/ws/updates")
async def updates_socket(websocket: WebSocket, ctx: Viewer) -> None:
    """Live multi-model validation updates of the organisation (`validation_added`,
    `consensus_updated`); `?after=SEQ` resumes, `?task_id=` narrows to one task."""
    try:
        after, task_id = _params(websocket)
    except (ValueError, ValueRankError) as exc:
        await websocket.accept()  # then close, so that the client reads why
        message = exc.message if isinstance(exc, ValueRankError) else str(exc)
        await websocket.close(code=POLICY_VIOLATION, reason=message[:120])
        return
    app = ctx.app
    org_id = ctx.org_id
    await websocket.accept()
    async with app.db.transaction() as conn:
        missing = await _missing_task(conn, org_id, task_id)
        head = await last_update_seq(conn, org_id)
    if missing is not None:
        await websocket.close(code=NOT_FOUND, reason=missing[:120])
        return
    cursor = head if after is None else after
    await websocket.send_json({"type": "subscribed", "last_seq": head, "after": cursor})
    receiver = asyncio.create_task(websocket.receive())
    stopping = asyncio.create_task(app.stopping.wait())
    with app.waker.subscribe(updates_partition(org_id)) as wakeup:
        woken: asyncio.Task[None] | None = None
        try:
            while True:
                wakeup.arm()  # before reading: an update written meanwhile wakes the wait
                try:
                    async with app.db.transaction() as conn:
                        batch = await updates_after(conn, org_id, cursor, BATCH)
                except (OperationalError, DBAPIError) as exc:
                    log.warning("/ws/updates: database error, retrying: %s", exc)
                    batch = []
                for update in batch:
                    if task_id is None or update.task_id == task_id:
                        await websocket.send_json(update.to_dict())
                    cursor = update.seq
                if len(batch) == BATCH:
                    continue
                woken = asyncio.create_task(wakeup.wait())
                done, _ = await asyncio.wait(
                    {receiver, stopping, woken}, return_when=asyncio.FIRST_COMPLETED
                )
                if woken not in done:
                    woken.cancel()  # the next pass waits afresh
                if stopping in done:
                    await websocket.close(code=GOING_AWAY)
                    return
                if receiver in done:
                    if receiver.result().get("type") == "websocket.disconnect":
                        return
                    receiver = asyncio.create_task(websocket.receive())  # messages are ignored
        except (WebSocketDisconnect, RuntimeError):
            return  # the client went away mid-send
        finally:
            for task in (receiver, stopping, woken):
                if task is not None:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await task
