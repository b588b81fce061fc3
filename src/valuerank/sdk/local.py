"""The Python API on a database of its own (SQLite or PostgreSQL): the services the CLI and
the API call, in the install's default organisation, as its local admin.

The services are async; a notebook's cell is not (and Jupyter already runs an event loop in
its thread), so the database lives on an event loop in a thread of its own and each call
waits for its answer there.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from valuerank.sdk.backend import Table, normalised

T = TypeVar("T")


class _Loop:
    """An event loop in a daemon thread, to run coroutines from synchronous code."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def call(self, work: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(work, self.loop).result()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


class LocalBackend:
    """A database URL (`sqlite:///path.db`, `postgresql://…`) and an organisation's slug."""

    def __init__(self, url: str, org: str) -> None:
        from valuerank.db import create_database

        self.db = create_database(url)
        self._loop = _Loop()
        try:
            self.org_id = self._loop.call(self._open(org))
        except BaseException:
            self.close()
            raise

    async def _open(self, org: str) -> str:
        from valuerank.db.migrate import ensure_schema
        from valuerank.orgs import ensure_org

        await ensure_schema(self.db)
        async with self.db.transaction() as conn:
            return await ensure_org(conn, org)

    def _read(self, work: Callable[[Any], Awaitable[T]]) -> T:
        """`work(conn)` in one read transaction (a consistent snapshot)."""

        async def _go() -> T:
            async with self.db.snapshot() as conn:
                return await work(conn)

        return self._loop.call(_go())

    def definitions(self, limit: int) -> list[dict[str, Any]]:
        from valuerank.definitions.service import list_definitions_page

        async def _go(conn: Any) -> list[Any]:
            found = await list_definitions_page(conn, self.org_id, limit=limit)
            return [s.summary() for s in found]

        return list(normalised(self._read(_go)))

    def definition(self, ref: str) -> dict[str, Any]:
        from valuerank.definitions.service import get_definition

        async def _go(conn: Any) -> dict[str, Any]:
            return (await get_definition(conn, self.org_id, ref)).detail()

        return dict(normalised(self._read(_go)))

    def runs(self, limit: int) -> list[dict[str, Any]]:
        from valuerank.runs.progress import run_reports
        from valuerank.runs.run import list_runs
        from valuerank.shapes import dump

        async def _go(conn: Any) -> Any:
            listed = await list_runs(conn, self.org_id, limit=limit)
            return dump(await run_reports(conn, self.org_id, listed))

        return list(normalised(self._read(_go)))

    def run(self, ref: str) -> dict[str, Any]:
        from valuerank.runs.progress import run_report
        from valuerank.shapes import dump

        async def _go(conn: Any) -> Any:
            return dump(await run_report(conn, self.org_id, ref))

        return dict(normalised(self._read(_go)))

    def table(self, run_id: str, *, with_text: bool) -> Table:
        from valuerank.exchange.run_data import load_run
        from valuerank.exchange.run_table import run_table, table_rows

        async def _go(conn: Any) -> Table:
            snapshot = await load_run(conn, self.org_id, run_id)
            found = await run_table(conn, self.org_id, snapshot, with_text=with_text)
            rows = [row async for batch in table_rows(conn, self.org_id, found) for row in batch]
            return Table(found.layout.columns(), rows)

        table = self._read(_go)
        return Table(table.columns, normalised(table.rows))

    def analysis(self, run_id: str) -> dict[str, Any]:
        from valuerank.findings.analyses import run_analysis

        outcome = self._loop.call(run_analysis(self.db, self.org_id, run_id))
        return dict(normalised(outcome.analysis))

    def transcript(self, transcript_id: str) -> dict[str, Any]:
        from valuerank.runs.transcripts import get_transcript

        return dict(
            normalised(self._read(lambda conn: get_transcript(conn, self.org_id, transcript_id)))
        )

    def compare(self, baseline: str, other: str, timeout: float) -> dict[str, Any]:
        from valuerank.findings.comparisons import compare_runs
        from valuerank.shapes import dump

        outcome = self._loop.call(compare_runs(self.db, self.org_id, baseline, other))
        return dict(normalised(dump(outcome.comparison)))

    def close(self) -> None:
        if self._loop.thread.is_alive():
            self._loop.call(self.db.dispose())
            self._loop.stop()
