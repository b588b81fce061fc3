"""How the worker lives through a database that is away for a while (restarting, say): which
errors mean "unreachable, try again", the backoff between tries, one log line per failure,
and the PostgreSQL connections it keeps between short uses."""

from __future__ import annotations

import contextlib
import logging
import random

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.engine import Database

# The worker's own logger: operators (and tests) read every worker message under one name.
log = logging.getLogger("valuerank.queue.worker")

# Backoff after a database connection error: 0.1 s doubling up to 2 s (with jitter).
DB_RETRY_BASE_SECONDS = 0.1
DB_RETRY_CAP_SECONDS = 2.0


def is_connection_error(exc: BaseException) -> bool:
    """The database could not be reached or dropped the connection (e.g. it is restarting):
    a transient failure worth retrying, not a bug."""
    if isinstance(exc, DBAPIError):
        return exc.connection_invalidated or isinstance(exc, (OperationalError, InterfaceError))
    return isinstance(exc, (OSError, TimeoutError, PoolTimeoutError))


def db_retry_delay(failures: int) -> float:
    """The wait before retry number `failures` (1, 2, …) after connection errors."""
    ceiling = min(DB_RETRY_CAP_SECONDS, DB_RETRY_BASE_SECONDS * 2.0 ** max(0, failures - 1))
    return float(ceiling * random.uniform(0.5, 1.0))


def log_db_failure(what: str, exc: Exception) -> None:
    """One line for a connection error (they come in bursts while a server restarts), the
    full traceback for anything else."""
    if is_connection_error(exc):
        first = str(exc).strip().splitlines()
        reason = first[0] if first else type(exc).__name__
        log.warning("%s failed, database unavailable (%s); will retry", what, reason)
    else:
        log.exception("%s failed; will try again", what)


class KeptConnection:
    """A PostgreSQL connection kept between short uses by one task at a time (none on
    SQLite, where `get` says None: use `db.transaction`)."""

    def __init__(self, db: Database, *, autocommit: bool) -> None:
        self._db = db
        self._autocommit = autocommit
        self._conn: AsyncConnection | None = None

    async def get(self) -> AsyncConnection | None:
        if self._db.url.dialect != "postgresql":
            return None
        if self._conn is None:
            conn = await self._db.engine.connect()
            if self._autocommit:
                try:
                    conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
                except BaseException:
                    await conn.close()
                    raise
            self._conn = conn
        return self._conn

    async def drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()
