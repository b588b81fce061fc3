"""Values a process remembers in place of database reads, for as long as it is told of every
change to what they were read from (on PostgreSQL, triggers NOTIFY the API's listener:
api/listener.py). Used by the API token cache and by the consensus reads' task heads.

`trusted()` says whether the process hears every change right now (its listener is
connected); while it does not, nothing is served and nothing is kept. `forget` is called for
each change heard, and for "anything may have changed" when the listener (re)connects. A
value read from the database before a change that was heard since is never kept: readers
note `generation` before reading and hand it to `keep`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from cachetools import TTLCache

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class NotifiedCache(Generic[K, V]):
    def __init__(
        self,
        *,
        ttl_seconds: float,
        max_entries: int,
        trusted: Callable[[], bool],
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self._entries: TTLCache[K, V] = TTLCache(max_entries, ttl_seconds, timer=timer)
        self._trusted = trusted
        self.generation = 0  # bumped by every `forget`

    def get(self, key: K) -> V | None:
        """The kept value, if the cache may be trusted now."""
        return self._entries.get(key) if self._trusted() else None

    def keep(self, key: K, value: V, generation: int) -> None:
        """Keep a value read while `generation` was current (nothing changed since)."""
        if generation == self.generation and self._trusted():
            self._entries[key] = value

    def forget(self, key: K | None = None) -> None:
        """`key` changed, or anything may have (None)."""
        self.generation += 1
        if key is None:
            self._entries.clear()
        else:
            self._entries.pop(key, None)

    def __len__(self) -> int:
        return len(self._entries)
