"""Values computed from runs' inputs, kept in memory per database engine while the runs'
`inputs_version`s are unchanged.

Every write that changes what a run's analysis reads (its transcripts, decisions, judgments,
consensus, scenarios) bumps `runs.inputs_version` (runs/records.py `bump_inputs`), so a value
keyed by the versions of the runs it was computed from is current as long as they are. Read
the versions *before* the inputs: a write between the two then changes the key, and what is
kept is never older than its key. Kept values are shared between readers: none may change
one (keep frozen dataclasses and read-only arrays).
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Generic, TypeVar

from cachetools import LRUCache
from sqlalchemy import Engine, select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import runs

V = TypeVar("V")


async def inputs_versions(
    conn: AsyncConnection, org_id: str, run_ids: Sequence[str]
) -> tuple[int, ...]:
    """The runs' inputs versions, in `run_ids`' order (0 for a run not found)."""
    rows = await conn.execute(
        select(runs.c.id, runs.c.inputs_version).where(
            runs.c.org_id == org_id, runs.c.id.in_(run_ids)
        )
    )
    found = {run_id: int(version or 0) for run_id, version in rows}
    return tuple(found.get(run_id, 0) for run_id in run_ids)


class KeptPerEngine(Generic[V]):
    """The last `size` values per database engine (an engine is one database; tests and
    benchmarks open several in one process)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._by_engine: weakref.WeakKeyDictionary[Engine, LRUCache[Hashable, V]] = (
            weakref.WeakKeyDictionary()
        )

    async def get(
        self,
        conn: AsyncConnection,
        org_id: str,
        run_ids: Sequence[str],
        variant: Hashable,
        read: Callable[[], Awaitable[V]],
    ) -> V:
        """What `read` returns for these runs (and `variant`: whatever else it depends on),
        kept while their inputs versions are unchanged. The versions are read first."""
        versions = await inputs_versions(conn, org_id, run_ids)
        key = (org_id, tuple(zip(run_ids, versions, strict=True)), variant)
        kept = self._by_engine.setdefault(conn.sync_engine, LRUCache(maxsize=self._size))
        found = kept.get(key)
        if found is None:
            found = kept[key] = await read()
        return found
