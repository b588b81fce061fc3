"""Idle workers wake when jobs can be claimed (PostgreSQL LISTEN/NOTIFY); polling stays.

Senders: a transaction that enqueues jobs runnable now (and one that gives jobs back, requeues
failed ones or resumes a partition) calls `notify_jobs`, which sends
`NOTIFY valuerank_jobs, '<kinds>'`. PostgreSQL delivers it at commit, so a worker woken by it
finds the jobs committed, and folds identical notices of one transaction into one: a batch of
any size costs one notice per distinct payload. The payload is a JSON list of the jobs' kinds,
or empty for "any kind"; jobs held back (`run_at` later) send nothing, their worker's poll
(and the timers it keeps for retries and rate limits) covers them.

Receivers: `WorkerWakeup`, one LISTEN connection per worker (`valuerank.db.listen.Listener`,
shown as `valuerank worker <id>` in pg_stat_activity), sets the worker's wake-up event when it
hears of a kind the worker handles and it has room for a job, and once after every (re)connect
(a notice sent while it was away is lost: the worker claims once to catch up). The worker's
poll (`poll_seconds`) is unchanged and remains the safety net; on SQLite nothing is sent and
workers poll.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.engine import Database

if TYPE_CHECKING:  # the senders (every enqueue, `runs status` included) never load psycopg
    import psycopg

JOBS_CHANNEL = "valuerank_jobs"
# PostgreSQL refuses payloads of 8000 bytes or more; past this, "any kind".
MAX_PAYLOAD_CHARS = 2000

Kinds = frozenset[str] | None  # None: any kind


def jobs_payload(kinds: Iterable[str] | None) -> str:
    """The notice's payload for jobs of `kinds` (None: any kind)."""
    if kinds is None:
        return ""
    payload = json.dumps(sorted(set(kinds)), separators=(",", ":"))
    return payload if len(payload) <= MAX_PAYLOAD_CHARS else ""


def payload_kinds(payload: str) -> Kinds:
    """The kinds a notice names; None (any kind) for an empty or unreadable payload (an
    operator's bare `NOTIFY valuerank_jobs` wakes every worker)."""
    try:
        kinds = json.loads(payload) if payload else None
    except ValueError:
        return None
    if isinstance(kinds, list) and all(isinstance(k, str) for k in kinds):
        return frozenset(kinds)
    return None


async def notify_jobs(conn: AsyncConnection, kinds: Iterable[str] | None = None) -> None:
    """Tell listening workers, at commit, that jobs of `kinds` (None: any) can be claimed now.
    Nothing on SQLite. Call once per statement or transaction, not per job."""
    if conn.dialect.name != "postgresql":
        return
    await conn.execute(
        text("SELECT pg_notify(:channel, :payload)"),
        {"channel": JOBS_CHANNEL, "payload": jobs_payload(kinds)},
    )


class WorkerWakeup:
    """A worker's LISTEN connection (see the module). `wants(kinds)` says whether a notice for
    `kinds` should wake it now; `wake()` wakes it. Started and stopped by the worker."""

    def __init__(
        self,
        db: Database,
        *,
        worker_id: str,
        wants: Callable[[Kinds], bool],
        wake: Callable[[], None],
    ) -> None:
        from valuerank.db.listen import Listener  # psycopg: only a worker that listens loads it

        self._wants = wants
        self._wake = wake
        self.listener = Listener(
            db,
            (JOBS_CHANNEL,),
            name=f"worker {worker_id} wake-up",
            application_name=f"valuerank worker {worker_id}",
            on_notice=self._heard,
            on_connect=wake,  # catch up: what was enqueued while nobody listened
        )
        self.woken = 0  # notices that woke the worker (for tests and operators)
        self._task: asyncio.Task[None] | None = None

    def _heard(self, notice: psycopg.Notify) -> None:
        if self._wants(payload_kinds(notice.payload)):
            self.woken += 1
            self._wake()

    def start(self) -> None:
        """Start listening (in the running loop); a no-op while it listens already."""
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self.listener.run(), name="valuerank-job-wakeup")

    async def stop(self) -> None:
        """Stop listening and close the connection."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
