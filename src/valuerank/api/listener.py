"""Wakes the event streams of one app process when events are written.

On PostgreSQL one dedicated connection per process LISTENs on the queue's channel (every
event's transaction sends `NOTIFY valuerank_events, '<partition>'` at commit) and sets the
asyncio events of the streams waiting on that partition. The connection is a
`valuerank.db.listen.Listener` (shared with the workers' wake-up): it reconnects (with backoff)
when the database goes away, and this module wakes every stream when it (re)connects, since a
NOTIFY sent while it was away is lost. Streams still poll, slowly, as a safety net: polling is the
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
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import psycopg

from valuerank.db import Database
from valuerank.db.listen import Listener
from valuerank.queue.events import NOTIFY_CHANNEL

AUTH_CHANNEL = "valuerank_auth"  # the triggers of schema 0014_auth_change_notify
VALIDATION_CHANNEL = "valuerank_validation"  # of schema 0015_validation_change_notify
CACHE_CHANNELS = (AUTH_CHANNEL, VALIDATION_CHANNEL)
# Told a notice's payload, or None: anything may have changed unseen.
Forget = Callable[[str | None], None]

SQLITE_POLL_SECONDS = 0.25
# With LISTEN working a stream is woken at once; this poll only covers a lost NOTIFY.
POSTGRES_POLL_SECONDS = 5.0


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
        self._listener = Listener(
            db,
            (NOTIFY_CHANNEL, *CACHE_CHANNELS),
            name="event listener",
            application_name="valuerank api events",
            on_notice=self._dispatch,
            on_connect=self._reconnected,
            on_disconnect=lambda: self._changed(None),
        )
        self._subscriptions: set[Subscription] = set()
        self._watchers: dict[str, list[Forget]] = {channel: [] for channel in CACHE_CHANNELS}
        self._task: asyncio.Task[None] | None = None

    @property
    def connected(self) -> asyncio.Event:
        """Set while LISTEN is in place (and heard)."""
        return self._listener.connected

    @property
    def backend_pid(self) -> int | None:
        """Of the listening connection (for operators)."""
        return self._listener.backend_pid

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

    def _reconnected(self) -> None:
        self._changed(None)  # before `connected` is set: nothing cached survives an outage
        self.wake()  # anything written while nobody listened: every stream reads again

    async def _run(self) -> None:
        listening = asyncio.create_task(self._listener.run())
        stopped = asyncio.create_task(self.stopping.wait())
        try:
            await asyncio.wait({listening, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (listening, stopped):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    def _dispatch(self, notice: psycopg.Notify) -> None:
        if notice.channel == NOTIFY_CHANNEL:
            self.wake(notice.payload)
        else:
            self._changed(notice.channel, notice.payload)
