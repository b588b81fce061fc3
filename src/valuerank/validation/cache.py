"""The cache of the consensus reads (multi-model view, task summary): five minutes at most,
and never stale. Entries are keyed by the task's version (`validation_tasks.version`), which
every write to the task bumps in its own transaction: a reader that finds a newer version
finds no entry, so a new validation is seen at once by every API process, each with its own
cache and no message between them. The TTL only bounds memory and how long a changed model
weight in the registry (which bumps no task) can take to show.

Reading the version is a query per request, half the cost of a hit. So the cache also keeps
each task's head (version and name) while it is told of every change: on PostgreSQL a trigger
NOTIFYs `valuerank_validation` with the task's id when its version, name or organisation
changes or it goes (schema 0015), and the API's listener calls `forget` (see
valuerank/notified_cache.py for when a kept head may stand in for the query).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from cachetools import TTLCache

from valuerank.notified_cache import NotifiedCache

TTL_SECONDS = 300.0
MAX_ENTRIES = 20_000


@dataclass(frozen=True)
class CachedRead:
    """A computed read: its data encoded once as JSON (served as is on a hit), and how many
    models it covers (for `?debug=true`)."""

    body: bytes
    models: int


@dataclass(frozen=True)
class TaskHead:
    """What a read needs to know of its task first: whose it is, its version and name."""

    org_id: str
    version: int
    name: str


class ReadCache:
    def __init__(
        self,
        *,
        ttl_seconds: float = TTL_SECONDS,
        max_entries: int = MAX_ENTRIES,
        timer: Callable[[], float] = time.monotonic,
        trusted: Callable[[], bool] = lambda: False,
    ) -> None:
        self._entries: TTLCache[Hashable, CachedRead] = TTLCache(
            maxsize=max_entries, ttl=ttl_seconds, timer=timer
        )
        self._heads: NotifiedCache[int, TaskHead] = NotifiedCache(
            ttl_seconds=ttl_seconds, max_entries=max_entries, trusted=trusted, timer=timer
        )

    @property
    def generation(self) -> int:
        """Note it before reading a head from the database; hand it to `keep_head`."""
        return self._heads.generation

    def head(self, org_id: str, task_id: int) -> TaskHead | None:
        """The task's kept head, if it may be trusted and is the organisation's."""
        found = self._heads.get(task_id)
        return found if found is not None and found.org_id == org_id else None

    def keep_head(self, task_id: int, head: TaskHead, generation: int) -> None:
        self._heads.keep(task_id, head, generation)

    def forget(self, task_id: str | None) -> None:
        """A task changed (its id as the notice says it), or any may have (None, or the
        empty payload of a TRUNCATE)."""
        self._heads.forget(int(task_id) if task_id and task_id.isdigit() else None)

    def get(self, key: Hashable) -> CachedRead | None:
        return self._entries.get(key)

    def put(self, key: Hashable, read: CachedRead) -> None:
        self._entries[key] = read

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()
        self.forget(None)


def view_key(org_id: str, task_id: int, tag_id: str, version: int) -> tuple[Any, ...]:
    return ("view", org_id, task_id, tag_id, version)


def summary_key(org_id: str, task_id: int, version: int) -> tuple[Any, ...]:
    return ("summary", org_id, task_id, version)
