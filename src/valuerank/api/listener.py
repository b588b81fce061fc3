"""Wakes the event streams of one app process when events are written.

On PostgreSQL one dedicated connection per process LISTENs on the queue's channel (every
event's transaction sends `NOTIFY valuerank_events, '<partition>'` at commit) and sets the
asyncio events of the streams waiting on that partition. It reconnects (with backoff) when
the database goes away, and wakes every stream when it (re)connects, since a NOTIFY sent
while it was away is lost. Streams still poll, slowly, as a safety net: polling is the
truth, NOTIFY only makes it early. On SQLite there is nothing to listen to and streams poll
often.

The same connection LISTENs on the channels of the process's caches, which triggers notify
at commit: `valuerank_auth` when a token or a membership changes (schema 0014; the token
cache, api/token_cache.py) and `valuerank_validation` when a validation task changes (schema
0015, with the task's id; the consensus reads' cache, validation/cache.py). Each cache is told
what changed, and told that anything may have changed whenever the connection drops or is
made again (a notice sent while nobody listened is lost).

A stream subscribes first, then loops: `arm()`, read the database, send, `wait()`. A NOTIFY
that arrives while it reads sets its event, so the wait returns at once and nothing is
missed between a read and the wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import psycopg

from valuerank.db import Database
from valuerank.db.engine import PG_CONNECT_ARGS
from valuerank.queue.events import NOTIFY_CHANNEL

log = logging.getLogger("valuerank.api")

AUTH_CHANNEL = "valuerank_auth"  # the triggers of schema 0014_auth_change_notify
VALIDATION_CHANNEL = "valuerank_validation"  # of schema 0015_validation_change_notify
CACHE_CHANNELS = (AUTH_CHANNEL, VALIDATION_CHANNEL)
# Told a notice's payload, or None: anything may have changed unseen.
Forget = Callable[[str | None], None]

SQLITE_POLL_SECONDS = 0.25
# With LISTEN working a stream is woken at once; this poll only covers a lost NOTIFY.
POSTGRES_POLL_SECONDS = 5.0
RECONNECT_SECONDS = (0.2, 10.0)  # first and longest wait between connection attempts
HEAR_CHECK_SECONDS = 5.0  # for the listener's own test notice to come back


@dataclass(eq=False)
class Subscription:
    """One waiting stream: `partitions` it wants (None: every partition)."""

    waker: EventWaker
    partitions: frozenset[str] | None
    woken: asyncio.Event = field(default_factory=asyncio.Event)

    def arm(self) -> None:
        """Call before reading the database: a NOTIFY from now on ends the next `wait`."""
        self.woken.clear()

    async def wait(self, stop: asyncio.Event | None = None, timeout: float | None = None) -> None:
        """Until an event of the subscribed partitions is written, `stop` is set, or the poll
        interval (or `timeout`) passes."""
        waits = {asyncio.ensure_future(self.woken.wait())}
        if stop is not None:
            waits.add(asyncio.ensure_future(stop.wait()))
        seconds = self.waker.poll_seconds if timeout is None else timeout
        try:
            await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in waits:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task


class EventWaker:
    """The listener of one app process (see the module). Created lazily, in the running loop,
    by `AppContext.waker`; it stops when `stopping` is set."""

    def __init__(
        self, db: Database, *, stopping: asyncio.Event, poll_seconds: float | None = None
    ) -> None:
        self.db = db
        self.stopping = stopping
        self.listens = db.dialect == "postgresql"
        default = POSTGRES_POLL_SECONDS if self.listens else SQLITE_POLL_SECONDS
        self.poll_seconds = default if poll_seconds is None else poll_seconds
        self.connected = asyncio.Event()  # set while LISTEN is in place
        self.backend_pid: int | None = None  # of the listening connection (for operators)
        self._subscriptions: set[Subscription] = set()
        self._watchers: dict[str, list[Forget]] = {channel: [] for channel in CACHE_CHANNELS}
        self._task: asyncio.Task[None] | None = None

    @contextlib.contextmanager
    def subscribe(self, *partitions: str) -> Iterator[Subscription]:
        """Wake-ups for events of `partitions` (none given: of every partition)."""
        sub = Subscription(self, frozenset(partitions) if partitions else None)
        self._subscriptions.add(sub)
        self._ensure_listening()
        try:
            yield sub
        finally:
            self._subscriptions.discard(sub)

    def watch(self, channel: str, forget: Forget) -> None:
        """Call `forget(payload)` on every notice of `channel` (one of CACHE_CHANNELS), and
        `forget(None)` whenever the listening connection is lost or made. Starts listening."""
        if forget not in self._watchers[channel]:
            self._watchers[channel].append(forget)
        self._ensure_listening()

    def _changed(self, channel: str | None, payload: str | None = None) -> None:
        """Tell the watchers of `channel` (None: of every channel) what changed."""
        for name, watchers in self._watchers.items():
            if channel is None or name == channel:
                for forget in watchers:
                    forget(payload)

    def _ensure_listening(self) -> None:
        idle = self._task is None or self._task.done()
        if self.listens and idle and not self.stopping.is_set():
            self._task = asyncio.create_task(self._run(), name="valuerank-event-listener")

    def wake(self, partition: str | None = None) -> None:
        """Wake the streams of `partition` (None: all of them)."""
        for sub in list(self._subscriptions):
            if partition is None or sub.partitions is None or partition in sub.partitions:
                sub.woken.set()

    async def _run(self) -> None:
        listening = asyncio.create_task(self._listen_forever())
        stopped = asyncio.create_task(self.stopping.wait())
        try:
            await asyncio.wait({listening, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (listening, stopped):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    def _dsn(self) -> str:
        return self.db.url.url.set(drivername="postgresql").render_as_string(hide_password=False)

    async def _listen_forever(self) -> None:
        delay = RECONNECT_SECONDS[0]
        while True:
            try:
                await self._listen_once()
                delay = RECONNECT_SECONDS[0]  # it was up: the server closed it; try again now
            except (psycopg.Error, OSError) as exc:
                log.warning("event listener: %s; reconnecting in %.1f s", str(exc).strip(), delay)
            finally:
                self.connected.clear()
                self.backend_pid = None
                self._changed(None)
            await asyncio.sleep(delay)
            delay = min(delay * 2, RECONNECT_SECONDS[1])

    async def _listen_once(self) -> None:
        conn = await psycopg.AsyncConnection.connect(
            self._dsn(), autocommit=True, **PG_CONNECT_ARGS
        )
        async with conn:
            for channel in (NOTIFY_CHANNEL, *CACHE_CHANNELS):
                await conn.execute(f"LISTEN {channel}")
            self.backend_pid = conn.info.backend_pid
            await self._hears(conn)
            self._changed(None)  # before `connected`: nothing cached survives an outage
            self.connected.set()
            self.wake()  # anything written while nobody listened: every stream reads again
            async for notice in conn.notifies():
                self._dispatch(notice)

    def _dispatch(self, notice: psycopg.Notify) -> None:
        if notice.channel == NOTIFY_CHANNEL:
            self.wake(notice.payload)
        else:
            self._changed(notice.channel, notice.payload)

    async def _hears(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """Prove the connection receives notices before anything trusts it: a pooler in
        transaction mode (PgBouncer's default) accepts LISTEN and delivers nothing, and the
        caches would then never be told of a change. Raises if its own NOTIFY never comes."""
        probe = f"listener-check-{uuid.uuid4().hex}"
        await conn.execute("SELECT pg_notify(%s, %s)", (NOTIFY_CHANNEL, probe))
        async for notice in conn.notifies(timeout=HEAR_CHECK_SECONDS):
            if notice.channel == NOTIFY_CHANNEL and notice.payload == probe:
                return
            self._dispatch(notice)
        raise psycopg.OperationalError(
            f"LISTEN hears no NOTIFY within {HEAR_CHECK_SECONDS:g} s (a connection pooler in "
            "transaction mode?): event streams poll and nothing is cached until it does"
        )
