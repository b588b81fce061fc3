"""Rate limits per client and endpoint class, counted by the `limits` package (moving window).

Classes (limits from the settings): `multi_model` for `/api/assumptions/multi-model/` and
`/api/assumptions/consensus/` (50/minute), `models` for `/api/assumptions/models` and
`/api/models` (200/minute), `standard` for every other path (100/minute); `/health` and
`/static/` are not counted. The client is a browser session (`session:<id>`: the pages'
requests never compete with the same user's API tokens), else the API token, else the user
(local admin), else the remote address. Over the limit: 429 RATE_LIMITED with `Retry-After`
(a WebSocket handshake is refused with the same 429 where the server can send one, else
closed with 1013 "try again later").

Counters live in Redis when VALUERANK_REDIS_URL is set, so every API process shares them;
otherwise in this process's memory. If Redis fails, counting goes on in memory (a warning at
most once a minute) rather than taking the API down.

Failed logins have their own budget (`LoginThrottle`): per account and per address, only
failures count, and a client over it is refused before its password is even checked.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import limits
from limits.aio.strategies import MovingWindowRateLimiter
from limits.errors import ConfigurationError, StorageError
from limits.storage import storage_from_string
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from valuerank.api.errors import error_response
from valuerank.config import Settings
from valuerank.errors import InvalidInputError, ValueRankError

log = logging.getLogger("valuerank.api")

MULTI_MODEL_PREFIXES = ("/api/assumptions/multi-model/", "/api/assumptions/consensus/")
MODELS_PATHS = ("/api/assumptions/models", "/api/models")
UNCOUNTED_PREFIXES = ("/health", "/api/ready", "/static/")  # probes are never throttled
WARN_EVERY_SECONDS = 60.0


class EndpointClass(StrEnum):
    STANDARD = "standard"
    MULTI_MODEL = "multi_model"
    MODELS = "models"
    LOGIN = "login"  # failed logins (LoginThrottle), not a path class


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def endpoint_class(path: str) -> EndpointClass | None:
    """The class whose limit a request to `path` counts against (None: not counted)."""
    if any(_under(path, p) for p in UNCOUNTED_PREFIXES):
        return None
    if path.startswith(MULTI_MODEL_PREFIXES):
        return EndpointClass.MULTI_MODEL
    if any(_under(path, p) for p in MODELS_PATHS):
        return EndpointClass.MODELS
    return EndpointClass.STANDARD


def client_host(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def client_key(principal: Any, scope: Scope) -> str:
    """Who is counted: a browser session, else the token, else the user, else the remote
    address. A session has a budget of its own, even one opened from an API token or by a
    user who also has tokens: the pages' own requests never compete with API clients'."""
    token_id = getattr(principal, "token_id", None)
    user_id = getattr(principal, "user_id", None)
    session_id = getattr(principal, "session_id", None)
    if session_id and getattr(principal, "via", None) == "session":
        return f"session:{session_id}"
    if token_id:
        return f"token:{token_id}"
    if user_id:
        return f"user:{user_id}"
    return f"addr:{client_host(scope)}"


class RateLimitedError(ValueRankError):
    code = "RATE_LIMITED"
    http_status = 429

    def __init__(self, retry_after: int, what: str = "requests") -> None:
        self.retry_after = retry_after
        super().__init__(
            f"too many {what}: try again in {retry_after} s",
            hint="slow down; the limits are per client and endpoint class "
            "(docs/access.md, Rate limits)",
        )

    @property
    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    limit: int
    retry_after: int = 0  # seconds, when not allowed


class RateLimiter:
    """Moving-window counters per (class, client), in Redis or in memory."""

    def __init__(self, settings: Settings) -> None:
        self.enabled = settings.rate_limits_enabled
        self.items: dict[EndpointClass, limits.RateLimitItem] = {
            EndpointClass.STANDARD: limits.parse(settings.rate_limit_standard),
            EndpointClass.MULTI_MODEL: limits.parse(settings.rate_limit_multi_model),
            EndpointClass.MODELS: limits.parse(settings.rate_limit_models),
            EndpointClass.LOGIN: limits.parse(settings.rate_limit_login),
        }
        self.prefix = settings.rate_limit_key_prefix
        self.shared = settings.redis_url is not None
        self._memory = MovingWindowRateLimiter(storage_from_string("async+memory://"))
        self._limiter = self._memory
        if settings.redis_url is not None:
            url = settings.redis_url.get_secret_value()
            try:
                storage = storage_from_string(
                    "async+" + url, wrap_exceptions=True, key_prefix=f"{self.prefix}-limits"
                )
            except (ConfigurationError, ValueError) as exc:
                raise InvalidInputError(
                    f"VALUERANK_REDIS_URL is not usable: {exc}",
                    hint="redis://[:password@]host:6379/0, with `pip install 'valuerank[redis]'`",
                ) from None
            self._limiter = MovingWindowRateLimiter(storage)
        self._warned_at = -math.inf

    def _warn(self, exc: Exception) -> None:
        now = time.monotonic()
        if now - self._warned_at >= WARN_EVERY_SECONDS:
            self._warned_at = now
            log.warning("rate-limit storage (Redis) failed, counting in memory: %s", exc)

    async def _hit(self, item: limits.RateLimitItem, ids: tuple[str, ...]) -> Verdict:
        limiter = self._limiter
        try:
            allowed = await limiter.hit(item, *ids)
            if not allowed:
                stats = await limiter.get_window_stats(item, *ids)
        except StorageError as exc:
            self._warn(exc)
            limiter = self._memory
            allowed = await limiter.hit(item, *ids)
            if not allowed:
                stats = await limiter.get_window_stats(item, *ids)
        if allowed:
            return Verdict(True, item.amount)
        wait = max(1, math.ceil(stats.reset_time - time.time()))
        return Verdict(False, item.amount, wait)

    async def _room(self, item: limits.RateLimitItem, ids: tuple[str, ...]) -> Verdict:
        try:
            if await self._limiter.test(item, *ids):
                return Verdict(True, item.amount)
            stats = await self._limiter.get_window_stats(item, *ids)
        except StorageError as exc:
            self._warn(exc)
            if await self._memory.test(item, *ids):
                return Verdict(True, item.amount)
            stats = await self._memory.get_window_stats(item, *ids)
        return Verdict(False, item.amount, max(1, math.ceil(stats.reset_time - time.time())))

    async def hit(self, kind: EndpointClass, client: str) -> Verdict:
        """Count one request of `client` in `kind`; whether it was within the limit."""
        if not self.enabled:
            return Verdict(True, 0)
        return await self._hit(self.items[kind], (kind.value, client))

    async def room(self, kind: EndpointClass, client: str) -> Verdict:
        """Whether `client` may make one more request of `kind` (nothing counted)."""
        if not self.enabled:
            return Verdict(True, 0)
        return await self._room(self.items[kind], (kind.value, client))


class LoginThrottle:
    """Failed logins per account and per address: over the budget, a login is refused (429)
    before the password is checked, whether or not it would be right."""

    def __init__(self, limiter: RateLimiter) -> None:
        self.limiter = limiter

    @staticmethod
    def _keys(email: str, address: str) -> tuple[str, str]:
        return f"account:{email.strip().lower()}", f"addr:{address}"

    async def check(self, email: str, address: str) -> None:
        for key in self._keys(email, address):
            verdict = await self.limiter.room(EndpointClass.LOGIN, key)
            if not verdict.allowed:
                raise RateLimitedError(verdict.retry_after, "failed logins")

    async def failed(self, email: str, address: str) -> None:
        for key in self._keys(email, address):
            await self.limiter.hit(EndpointClass.LOGIN, key)


def rate_limited_response(request: Request, verdict: Verdict) -> Response:
    error = RateLimitedError(verdict.retry_after)
    return error_response(
        request,
        429,
        error.code,
        error.message,
        hint=error.hint,
        headers={**error.headers, "X-RateLimit-Limit": str(verdict.limit)},
    )


async def refuse_websocket(scope: Scope, receive: Receive, send: Send, verdict: Verdict) -> None:
    """A 429 to the handshake where the server supports it (ASGI websocket.http.response),
    else a close with 1013 (try again later)."""
    if "websocket.http.response" in scope.get("extensions", {}):
        await send(
            {
                "type": "websocket.http.response.start",
                "status": 429,
                "headers": [
                    (b"retry-after", str(verdict.retry_after).encode()),
                    (b"content-type", b"text/plain; charset=utf-8"),
                ],
            }
        )
        await send({"type": "websocket.http.response.body", "body": b"rate limited"})
        return
    await send({"type": "websocket.close", "code": 1013})


class RateLimitMiddleware:
    """Counts each request (after authentication, so it knows the client) and refuses those
    over their class's limit."""

    def __init__(self, app: ASGIApp, limiter: RateLimiter) -> None:
        self.app = app
        self.limiter = limiter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = endpoint_class(scope.get("path", "")) if scope["type"] != "lifespan" else None
        if kind is None or not self.limiter.enabled:
            await self.app(scope, receive, send)
            return
        principal = scope.get("state", {}).get("principal")
        verdict = await self.limiter.hit(kind, client_key(principal, scope))
        if verdict.allowed:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await refuse_websocket(scope, receive, send, verdict)
        else:
            await rate_limited_response(Request(scope, receive), verdict)(scope, receive, send)
