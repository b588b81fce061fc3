"""One PostgreSQL connection that LISTENs on some channels, and keeps listening.

Used by the API's event listener (api/listener.py: run events and cache changes) and by each
worker's wake-up (queue/wakeup.py: jobs enqueued). A dedicated psycopg connection in
autocommit mode (a LISTEN must not sit in a pooled connection, and a transaction would hold
notices back until it ends) sends LISTEN for each channel, proves it hears (see `_hears`),
then hands every notice to `on_notice`.

When the connection fails or the database goes away it reconnects: first after 0.2 s, then
doubling up to 10 s while attempts keep failing, and from 0.2 s again once a connection was
up. A NOTIFY sent while nobody listened is lost, so `on_connect` is called after every
(re)connect once LISTEN is in place: callers catch up there (read again, claim again), and
`on_disconnect` whenever a connection is lost or could not be made. A failure is logged once
per streak (a warning), the further attempts of the streak at debug level, and the connection
that ends a streak at info level. Nothing here raises to the caller: `run` ends only when
cancelled, and the connection is closed then.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from psycopg import sql

from valuerank.db.engine import PG_CONNECT_ARGS, Database

log = logging.getLogger(__name__)

RECONNECT_SECONDS = (0.2, 10.0)  # first and longest wait between connection attempts
HEAR_CHECK_SECONDS = 5.0  # for the listener's own test notice to come back
# The payload of that test notice: other listeners of the channel ignore it.
CHECK_PREFIX = "listener-check-"


def libpq_dsn(db: Database) -> str:
    """The database's URL as psycopg takes it (no SQLAlchemy driver name)."""
    return db.url.url.set(drivername="postgresql").render_as_string(hide_password=False)


def _reason(exc: BaseException | None) -> str:
    if exc is None:
        return "the server closed the connection"
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


class Listener:
    """LISTEN on `channels` over one kept connection (see the module). `name` says whose it is
    in log lines; `application_name` shows it in pg_stat_activity."""

    def __init__(
        self,
        db: Database,
        channels: Sequence[str],
        *,
        name: str,
        on_notice: Callable[[psycopg.Notify], None],
        on_connect: Callable[[], None] = lambda: None,
        on_disconnect: Callable[[], None] = lambda: None,
        application_name: str | None = None,
        reconnect_seconds: tuple[float, float] = RECONNECT_SECONDS,
    ) -> None:
        if not channels:
            raise ValueError("a listener needs at least one channel")
        self.db = db
        self.channels = tuple(channels)
        self.name = name
        self._on_notice = on_notice
        self._on_connect = on_connect
        self._on_disconnect = on_disconnect
        self._connect_args: dict[str, Any] = dict(PG_CONNECT_ARGS)
        if application_name is not None:
            self._connect_args["application_name"] = application_name[:63]  # PostgreSQL's limit
        self.connected = asyncio.Event()  # set while LISTEN is in place and heard
        self.backend_pid: int | None = None  # of the listening connection (for operators)
        self.failures = 0  # failed attempts (or lost connections) since the last good one
        # (first, longest) wait between attempts; read at each attempt, so it may be changed
        # while the listener runs.
        self.reconnect_seconds = reconnect_seconds

    async def run(self) -> None:
        """Listen until cancelled, reconnecting whenever the connection is lost."""
        delay = self.reconnect_seconds[0]
        while True:
            error: BaseException | None = None
            try:
                await self._listen_once()
            except Exception as exc:  # never ends the loop: a callback's bug is logged too
                error = exc
            finally:
                was_up = self.connected.is_set()
                self.connected.clear()
                self.backend_pid = None
                self._on_disconnect()
            if was_up:
                delay = self.reconnect_seconds[0]  # it was up: try again soon
            self._note_failure(error, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.reconnect_seconds[1])

    def _note_failure(self, error: BaseException | None, delay: float) -> None:
        self.failures += 1
        if self.failures == 1:
            log.warning(
                "%s: %s; reconnecting in %.1f s (then backing off up to %g s)",
                self.name,
                _reason(error),
                delay,
                self.reconnect_seconds[1],
                exc_info=error is not None and not isinstance(error, (psycopg.Error, OSError)),
            )
        else:
            log.debug("%s: attempt %d failed: %s", self.name, self.failures, _reason(error))

    async def _listen_once(self) -> None:
        conn = await psycopg.AsyncConnection.connect(
            libpq_dsn(self.db), autocommit=True, **self._connect_args
        )
        async with conn:
            for channel in self.channels:
                await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
            self.backend_pid = conn.info.backend_pid
            await self._hears(conn)
            if self.failures:
                log.info("%s: listening again after %d failure(s)", self.name, self.failures)
                self.failures = 0
            self._on_connect()
            self.connected.set()
            async for notice in conn.notifies():
                self._deliver(notice)

    def _deliver(self, notice: psycopg.Notify) -> None:
        if not notice.payload.startswith(CHECK_PREFIX):  # another listener's check
            self._on_notice(notice)

    async def _hears(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """Prove the connection receives notices before anything trusts it: a pooler in
        transaction mode (PgBouncer's default) accepts LISTEN and delivers nothing, and the
        caches would then never be told of a change. Raises if its own NOTIFY never comes."""
        probe = f"{CHECK_PREFIX}{uuid.uuid4().hex}"
        await conn.execute("SELECT pg_notify(%s, %s)", (self.channels[0], probe))
        async for notice in conn.notifies(timeout=HEAR_CHECK_SECONDS):
            if notice.channel == self.channels[0] and notice.payload == probe:
                return
            self._deliver(notice)
        raise psycopg.OperationalError(
            f"LISTEN hears no NOTIFY within {HEAR_CHECK_SECONDS:g} s (a connection pooler in "
            "transaction mode?): polling only until it does"
        )
