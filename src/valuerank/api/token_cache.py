"""Identities of recently used API tokens, so a request with a known token does not read the
database to authenticate (on PostgreSQL about half the server's work for a cached read).

Correctness rests on being told, not on the time to live: triggers (schema 0014) NOTIFY
`valuerank_auth` at the commit of any change to a token's usability or to a membership,
whichever process or SQL statement made it, and the process's listener (api/listener.py)
empties the cache when it hears one, or when its connection drops or is made again. Entries
are used only while that listener is connected. A lookup that read the database before a
change cannot store what it read after the change was heard (`_generation`). An entry also
lapses after `ttl_seconds`, and a token that expires sooner than that is not kept at all.

The routes that change credentials empty this process's cache themselves, so a revocation
holds for the very next request here; other processes follow within a NOTIFY's delay. SQLite
has no NOTIFY: there is no cache.
"""

from __future__ import annotations

from collections.abc import Callable

from cachetools import TTLCache

from valuerank.accounts import Identity, check_token
from valuerank.accounts.hashing import digest
from valuerank.api.listener import AUTH_CHANNEL, EventWaker
from valuerank.db import Database

MAX_TOKENS = 10_000  # distinct tokens kept; the least recently used go first


class TokenCache:
    """The identities of usable tokens, by the token's digest; see the module."""

    def __init__(
        self, db: Database, waker: Callable[[], EventWaker], *, ttl_seconds: float
    ) -> None:
        self.db = db
        self.ttl_seconds = ttl_seconds
        self.enabled = ttl_seconds > 0 and db.dialect == "postgresql"
        self._waker = waker  # the app's listener, made in the running loop on first use
        self._watching = False
        self._generation = 0
        self._entries: TTLCache[str, Identity] = TTLCache(MAX_TOKENS, ttl_seconds or 1)

    def forget(self, _changed: str | None = None) -> None:
        """Drop every entry (credentials may have changed; which ones does not matter)."""
        self._generation += 1
        self._entries.clear()

    def _trusted(self) -> bool:
        if not self.enabled:
            return False
        waker = self._waker()
        if not self._watching:
            waker.watch(AUTH_CHANNEL, self.forget)
            self._watching = True
        return waker.connected.is_set()

    async def authenticate(self, token: str) -> Identity | None:
        """The identity of a usable token (from the cache when it may be trusted), or None."""
        key = digest(token)
        trusted = self._trusted()
        if trusted and (identity := self._entries.get(key)) is not None:
            return identity
        generation = self._generation
        check = await check_token(self.db, token)
        if check is None:
            return None
        lasting = check.seconds_left is None or check.seconds_left > self.ttl_seconds
        if trusted and lasting and generation == self._generation and self._trusted():
            self._entries[key] = check.identity
        return check.identity

    def __len__(self) -> int:
        return len(self._entries)
