"""The cache of the consensus reads (multi-model view, task summary): five minutes at most,
and never stale. Entries are keyed by the task's version (`validation_tasks.version`), which
every write to the task bumps in its own transaction: a reader that finds a newer version
finds no entry, so a new validation is seen at once by every API process, each with its own
cache and no message between them. The TTL only bounds memory and how long a changed model
weight in the registry (which bumps no task) can take to show.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from cachetools import TTLCache

TTL_SECONDS = 300.0
MAX_ENTRIES = 20_000


@dataclass(frozen=True)
class CachedRead:
    """A computed read: its data encoded once as JSON (served as is on a hit), and how many
    models it covers (for `?debug=true`)."""

    body: bytes
    models: int


class ReadCache:
    def __init__(
        self,
        *,
        ttl_seconds: float = TTL_SECONDS,
        max_entries: int = MAX_ENTRIES,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self._entries: TTLCache[Hashable, CachedRead] = TTLCache(
            maxsize=max_entries, ttl=ttl_seconds, timer=timer
        )

    def get(self, key: Hashable) -> CachedRead | None:
        return self._entries.get(key)

    def put(self, key: Hashable, read: CachedRead) -> None:
        self._entries[key] = read

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()


def view_key(org_id: str, task_id: int, tag_id: str, version: int) -> tuple[Any, ...]:
    return ("view", org_id, task_id, tag_id, version)


def summary_key(org_id: str, task_id: int, version: int) -> tuple[Any, ...]:
    return ("summary", org_id, task_id, version)
