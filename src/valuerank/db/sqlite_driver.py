"""SQLAlchemy's aiosqlite adapter with one thread hop per statement instead of up to four.

aiosqlite runs every sqlite3 call on its connection's own thread; each call is a round trip
(a future, a queue put, the thread's wake-up, `call_soon_threadsafe` and the event loop's
self-pipe). SQLAlchemy's adapter makes four per statement: create the cursor, execute, fetch
the rows, close the cursor. Here the four run as one function on that thread, so a statement
costs one round trip: measured on SQLite, a one-row SELECT took ~700 µs of CPU before and
~330 µs after (2 loaded cores); a probe job runs ~25 statements.

What a statement does is unchanged: the same sqlite3 calls in the same order on the same
thread, the rows fetched in full before the cursor is closed (as the adapter's buffered
cursor did), the same errors. Server-side cursors (`stream`) keep the adapter's own class.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from threading import Thread
from typing import Any, cast

from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_cursor,
    AsyncAdapt_aiosqlite_dbapi,
)
from sqlalchemy.util.concurrency import await_only

# (description, rows or None, lastrowid, rowcount)
_Outcome = tuple[Any, list[Any] | None, int | None, int]


def _run_one(sqlite_conn: Any, operation: str, parameters: Any) -> _Outcome:
    """On the connection's thread: what the adapter did in four round trips."""
    cursor = sqlite_conn.cursor()
    try:
        if parameters is None:
            cursor.execute(operation)
        else:
            cursor.execute(operation, parameters)
        description = cursor.description
        rows = cursor.fetchall() if description else None
        return description, rows, cursor.lastrowid, cursor.rowcount
    finally:
        cursor.close()


def _run_many(sqlite_conn: Any, operation: str, seq_of_parameters: Any) -> tuple[int | None, int]:
    cursor = sqlite_conn.cursor()
    try:
        cursor.executemany(operation, seq_of_parameters)
        return cursor.lastrowid, cursor.rowcount
    finally:
        cursor.close()


class OneHopCursor(AsyncAdapt_aiosqlite_cursor):
    """The adapter's buffered cursor, each statement in one round trip."""

    __slots__ = ()

    def execute(self, operation: Any, parameters: Any = None) -> Any:
        adapted = cast("OneHopConnection", self._adapt_connection)
        try:
            # Read here, as the adapter did: a closed connection raises "no active connection".
            sqlite_conn = self._connection._conn
            adapted.settled = False
            description, rows, lastrowid, rowcount = self.await_(
                self._connection._execute(_run_one, sqlite_conn, operation, parameters)
            )
            adapted.settled = True
        except Exception as error:
            adapted.settled = True  # it ended on the thread (an error, not an abandoned call)
            adapted._handle_exception(error)
        if description:
            self.description = description
            self.lastrowid = self.rowcount = -1
            self._rows = deque(rows or ())
        else:
            self.description = None
            self.lastrowid = lastrowid
            self.rowcount = rowcount

    def executemany(self, operation: Any, seq_of_parameters: Sequence[Any]) -> Any:
        adapted = cast("OneHopConnection", self._adapt_connection)
        try:
            sqlite_conn = self._connection._conn
            adapted.settled = False
            lastrowid, rowcount = self.await_(
                self._connection._execute(_run_many, sqlite_conn, operation, seq_of_parameters)
            )
            adapted.settled = True
        except Exception as error:
            adapted.settled = True
            adapted._handle_exception(error)
        self.description = None
        self.lastrowid = lastrowid
        self.rowcount = rowcount


class OneHopConnection(AsyncAdapt_aiosqlite_connection):
    # False from the moment a call is handed to the thread until its answer came back: a
    # call abandoned half-way (a cancelled task) may still be running there.
    __slots__ = ("settled",)

    def __init__(self, dbapi: Any, connection: Any) -> None:
        super().__init__(dbapi, connection)
        self.settled = True

    def cursor(self, server_side: bool = False) -> AsyncAdapt_aiosqlite_cursor:
        if server_side:
            return super().cursor(server_side=True)
        return OneHopCursor(self)

    def commit(self) -> None:
        self.settled = False
        super().commit()
        self.settled = True

    def rollback(self) -> None:
        """The pool rolls back every connection it gets back, committed or not: with no
        transaction open that is a no-op, so the round trip is skipped. Only when every call
        made has returned (nothing can still be running on the thread); sqlite3 reads
        `in_transaction` from SQLite's autocommit flag, on any thread."""
        try:
            idle = self.settled and not self._connection._conn.in_transaction
        except Exception:  # closed, or not readable here: the adapter's way says why
            idle = False
        if not idle:
            self.settled = False
            super().rollback()
            self.settled = True


class OneHopDBAPI(AsyncAdapt_aiosqlite_dbapi):
    """The DB-API module SQLAlchemy's aiosqlite dialect is given (`create_engine(module=…)`)."""

    def connect(self, *arg: Any, **kw: Any) -> AsyncAdapt_aiosqlite_connection:
        if kw.get("async_fallback") or kw.get("async_creator_fn"):
            return super().connect(*arg, **kw)  # not used by ValueRank: the adapter's own
        connection = self.aiosqlite.connect(*arg, **kw)
        # The thread must not keep the interpreter alive (as the adapter sets it).
        if isinstance(connection, Thread):  # aiosqlite < 0.22: the connection is the thread
            connection.daemon = True
        else:
            connection._thread.daemon = True
        return OneHopConnection(self, await_only(connection))


def one_hop_dbapi() -> OneHopDBAPI:
    import sqlite3

    import aiosqlite

    return OneHopDBAPI(aiosqlite, sqlite3)
