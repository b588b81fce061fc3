"""Identities of recently used API tokens, so a request with a known token does not read the
database to authenticate (on PostgreSQL about half the server's work for a cached read).

Correctness rests on being told, not on the time to live: triggers (schema 0014) NOTIFY
`valuerank_auth` at the commit of any change to a token's usability or to a membership,
whichever process or SQL statement made it, and the process's listener (api/listener.py)
empties the cache when it hears one, or when its connection drops or is made again (see
valuerank/notified_cache.py for when an entry may stand in for the read). An entry also
lapses after `ttl_seconds`, and a token that expires sooner than that is not kept at all.

The routes that change credentials empty this process's cache themselves, so a revocation
holds for the very next request here; other processes follow within a NOTIFY's delay. SQLite
has no NOTIFY: there is no cache.
"""

from __future__ import annotations

from collections.abc import Callable

from valuerank.accounts import Identity, check_token
from valuerank.accounts.hashing import digest
from valuerank.api.listener import AUTH_CHANNEL, EventWaker
from valuerank.db import Database
from valuerank.notified_cache import NotifiedCache

MAX_TOKENS = 10_000  # distinct tokens kept; the least recently used go first


class TokenCache:
    """The identities of usable tokens, by the token's digest; see the module."""

    def __init__(
        self, db: Database, waker: Callable[[], EventWaker], *, ttl_seconds: float
    ) -> None:
        self.db = db
        self.ttl_seconds = ttl_seconds
        self._waker = waker  # the app's listener, made in the running loop on first use
        self._watching = False
        self._identities: NotifiedCache[str, Identity] = NotifiedCache(
            ttl_seconds=ttl_seconds or 1, max_entries=MAX_TOKENS, trusted=self._trusted
        )

    def forget(self, _changed: str | None = None) -> None:
        """Drop every entry (credentials may have changed; which ones does not matter)."""
        self._identities.forget()

    def _trusted(self) -> bool:
        """Connected to a listener that hears every change (never on SQLite: nothing to
        listen to); the first call starts watching."""
        if self.ttl_seconds <= 0:
            return False
        waker = self._waker()
        if not self._watching:
            waker.watch(AUTH_CHANNEL, self.forget)
            self._watching = True
        return waker.connected.is_set()

    async def authenticate(self, token: str) -> Identity | None:
        """The identity of a usable token (from the cache when it may be trusted), or None."""
        key = digest(token)
        if (identity := self._identities.get(key)) is not None:
            return identity
        generation = self._identities.generation
        check = await check_token(self.db, token)
        if check is None:
            return None
        if check.seconds_left is None or check.seconds_left > self.ttl_seconds:
            self._identities.keep(key, check.identity, generation)
        return check.identity

    def __len__(self) -> int:
        return len(self._identities)
