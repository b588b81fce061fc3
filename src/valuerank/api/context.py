"""The app's one typed context: the settings `create_app` was given and the objects made
from them once per app (rate limiter, access policy, login throttle, caches, the event
listener). Routes reach it through the dependencies of `api/deps.py`; everything else
through `app_context(app)` — the one reader of `app.state`, so no code reads the process's
environment behind the app's back."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from starlette.applications import Starlette

from valuerank.api.listener import VALIDATION_CHANNEL, EventWaker
from valuerank.api.token_cache import TokenCache
from valuerank.config import Settings
from valuerank.db import Database
from valuerank.queue.settings import QueueSettings
from valuerank.validation.cache import ReadCache

if TYPE_CHECKING:  # these modules import this one (error pages, the limiter's answers)
    from valuerank.api.access_policy import AccessPolicy
    from valuerank.api.errors import ErrorPage
    from valuerank.api.ratelimit import LoginThrottle, RateLimiter

_STATE_KEY = "valuerank"


@dataclass
class AppContext:
    """Shared by every request of one app. `stopping` is set when the server shuts down, so
    long-lived streams end instead of holding the shutdown up. `org_id` is the install's
    default organisation (auto-login and public reads act in it). `settings`: the app's,
    as given to `create_app`; `queue_settings`: the workers' (maintenance interval,
    retention, lease), which the maintenance routes use. `error_page`: the UI's, once
    installed (errors a browser asks for as a page)."""

    db: Database
    org_id: str
    settings: Settings
    limiter: RateLimiter
    access_policy: AccessPolicy
    login_throttle: LoginThrottle
    queue_settings: QueueSettings = field(default_factory=QueueSettings)
    error_page: ErrorPage | None = field(default=None, repr=False)
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    _waker: EventWaker | None = field(default=None, repr=False)
    _tokens: TokenCache | None = field(default=None, repr=False)
    _validation_cache: ReadCache | None = field(default=None, repr=False)
    _validation_cache_made: bool = field(default=False, repr=False)

    @property
    def token_cache_seconds(self) -> float:
        """How long a token's identity is cached (0: no cache; see `tokens`)."""
        return self.settings.token_cache_seconds

    @property
    def waker(self) -> EventWaker:
        """The process's event listener (see api/listener.py), made on first use: it needs
        the running loop, which the app's constructor may not have."""
        if self._waker is None:
            self._waker = EventWaker(self.db, stopping=self.stopping)
        return self._waker

    @property
    def tokens(self) -> TokenCache:
        """The process's cache of API tokens' identities (see api/token_cache.py). Routes
        that change credentials call `tokens.forget()` once they have committed."""
        if self._tokens is None:
            self._tokens = TokenCache(
                self.db, lambda: self.waker, ttl_seconds=self.token_cache_seconds
            )
        return self._tokens

    @property
    def validation_cache(self) -> ReadCache | None:
        """The app's cache of consensus reads, made on first use (it watches the listener);
        None when VALUERANK_VALIDATION_CACHE_SECONDS is 0."""
        if not self._validation_cache_made:
            self._validation_cache_made = True
            seconds = self.settings.validation_cache_seconds
            if seconds > 0:
                # Tasks' heads are kept while the listener hears every change (PostgreSQL).
                cache = ReadCache(ttl_seconds=seconds, trusted=self.waker.connected.is_set)
                if self.waker.listens:
                    self.waker.watch(VALIDATION_CHANNEL, cache.forget)
                self._validation_cache = cache
        return self._validation_cache


def install_context(app: Starlette, context: AppContext) -> None:
    """Make `context` the app's (`create_app` does it once)."""
    setattr(app.state, _STATE_KEY, context)


def app_context(app: Starlette) -> AppContext:
    """The context of an app made by `create_app`: the one way in to `app.state`."""
    context = getattr(app.state, _STATE_KEY, None)
    if not isinstance(context, AppContext):
        raise RuntimeError("this app has no ValueRank context: make it with create_app")
    return context
