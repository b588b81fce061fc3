"""Authentication of every request, on by default: API tokens, browser sessions, and two
explicit settings (auto-login of the local admin, public reads of some paths).

In order, the first that applies decides:

1. `GET /?token=<API token>` (any page): a browser's one-time jump from a printed URL. The
   token opens a session (cookies set) and the browser is sent to the same URL without it.
2. `Authorization: Bearer <API token>`: the token's user in the token's organisation. A
   wrong token is 401 — never a fall-back to anything else. Bearer requests need no CSRF token.
3. The session cookie (HttpOnly, SameSite=Strict, Secure over HTTPS, named after the port so
   servers on one host keep theirs apart): the session's user and organisation. Unsafe
   methods must echo the session's CSRF token in `X-CSRF-Token` (403 CSRF_FAILED); a
   WebSocket from another origin is closed (1008).
4. VALUERANK_AUTO_LOGIN on a loopback server, for a request from this machine (loopback
   client, loopback Host — no DNS rebinding —, no proxy forwarding header): the local admin.
   Unsafe methods echo the readable CSRF cookie in `X-CSRF-Token` (a cross-site page can
   neither read it nor send the header); other origins' WebSockets are closed.
   (`GET /metrics` also takes VALUERANK_METRICS_TOKEN as the Bearer: the scraper's secret,
   good for nothing else.)
5. GET/HEAD (and WebSockets) under VALUERANK_PUBLIC_READ_PREFIXES: an anonymous viewer of the
   install's default organisation.
6. Otherwise 401 UNAUTHORIZED (WebSocket close 1008) — or, for a browser asking for one of
   the UI's pages (GET, `Accept: text/html`), 303 to `/login?next=<the page>`.
   `/health`, `/api/ready`, `POST /api/auth/login` and the static files are open; the sign-in
   page `/login` is served to anyone (with the principal when there is one).

Rejected credentials count against the client address's standard rate limit, so guessing is
throttled. Secrets are compared by their SHA-256 through a unique index or with
`hmac.compare_digest`; none is logged (the access log's `token=` values are redacted).
"""

from __future__ import annotations

import ipaddress
import logging
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import HTTPConnection, Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from valuerank.accounts import (
    Identity,
    Role,
    authenticate_session,
    authenticate_token,
    ensure_local_admin,
    open_session,
)
from valuerank.accounts.hashing import TOKEN_PREFIX, digest, new_secret, same_secret
from valuerank.api.deps import Principal, Via
from valuerank.api.errors import error_response, wants_html
from valuerank.api.ratelimit import (
    EndpointClass,
    RateLimiter,
    Verdict,
    client_host,
    rate_limited_response,
)
from valuerank.api.token_cache import TokenCache
from valuerank.config import Settings
from valuerank.db import Database
from valuerank.errors import InvalidInputError

TOKEN_PARAM = "token"
SESSION_COOKIE = "valuerank_session"
CSRF_COOKIE = "valuerank_csrf"
CSRF_HEADER = "x-csrf-token"
OPEN_PATHS = frozenset({"/health", "/api/ready"})  # liveness and readiness probes
OPEN_ROUTES = frozenset({("POST", "/api/auth/login")})
STATIC_PREFIX = "/static/"  # stylesheets, scripts, icons: nothing secret, needed by /login
LOGIN_PAGE = "/login"
METRICS_PATH = "/metrics"
MIN_METRICS_TOKEN_LENGTH = 16
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
FORWARDING_HEADERS = ("forwarded", "x-forwarded-for", "x-forwarded-host", "x-real-ip")
UNAUTHORIZED_HINT = (
    "send `Authorization: Bearer <API token>` (`valuerank tokens create`), sign in with "
    "POST /api/auth/login, or open /?token=<API token> once in a browser"
)
CSRF_HINT = (
    "send the session's CSRF token (the csrf_token of /api/auth/me, also in the readable "
    "valuerank_csrf cookie) as X-CSRF-Token; scripts use a Bearer token instead"
)


def cookie_name(scope: Scope, base: str = SESSION_COOKIE) -> str:
    """`valuerank_session_<port>` (or `valuerank_csrf_<port>`): one per server on a host."""
    server = scope.get("server")
    port: int | None = server[1] if server else None
    return f"{base}_{port}" if port else base


def bearer_token(request: HTTPConnection) -> str | None:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def is_loopback_host(host: str) -> bool:
    """An address (or `localhost`) that only this machine can reach."""
    name = host.strip().strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def _host_name(host_header: str) -> str:
    """The host of a Host header: `127.0.0.1:8000` → `127.0.0.1`, `[::1]:80` → `::1`."""
    if host_header.startswith("["):
        return host_header[1:].split("]", 1)[0]
    return host_header.rsplit(":", 1)[0] if host_header.count(":") == 1 else host_header


def is_local_request(scope: Scope) -> bool:
    """From this machine, to this machine by a loopback name, not relayed by a proxy."""
    headers = Headers(scope=scope)
    if any(name in headers for name in FORWARDING_HEADERS):
        return False
    return is_loopback_host(client_host(scope)) and is_loopback_host(
        _host_name(headers.get("host", ""))
    )


def same_origin(scope: Scope) -> bool:
    """No Origin header (not a browser), or the Origin names this very Host."""
    headers = Headers(scope=scope)
    origin = headers.get("origin")
    if origin is None:
        return True
    return urlsplit(origin).netloc.lower() == headers.get("host", "").lower()


def _safe_path(scope: Scope) -> str:
    """The request's own path for a redirect: never `//host` or `/\\host` (open redirect)."""
    raw = scope.get("raw_path")
    path: str = raw.decode("latin-1") if raw else scope["path"]
    return "/" + path.lstrip("/\\")


def _secure(scope: Scope) -> bool:
    return scope.get("scheme") in ("https", "wss")


def set_session_cookies(
    response: Response, scope: Scope, secret: str, csrf: str, max_age: int
) -> None:
    """The session cookie (HttpOnly) and the CSRF cookie the page's JavaScript reads."""
    response.set_cookie(
        cookie_name(scope),
        secret,
        max_age=max_age,
        httponly=True,
        samesite="strict",
        secure=_secure(scope),
        path="/",
    )
    set_csrf_cookie(response, scope, csrf, max_age)


def set_csrf_cookie(response: Response, scope: Scope, csrf: str, max_age: int | None) -> None:
    response.set_cookie(
        cookie_name(scope, CSRF_COOKIE),
        csrf,
        max_age=max_age,
        httponly=False,  # read by the page to send X-CSRF-Token
        samesite="strict",
        secure=_secure(scope),
        path="/",
    )


def clear_session_cookies(response: Response, scope: Scope) -> None:
    for base in (SESSION_COOKIE, CSRF_COOKIE):
        response.delete_cookie(
            cookie_name(scope, base), path="/", samesite="strict", secure=_secure(scope)
        )


def _unauthorized(request: Request, message: str) -> Response:
    return error_response(
        request,
        401,
        "UNAUTHORIZED",
        message,
        hint=UNAUTHORIZED_HINT,
        headers={"WWW-Authenticate": "Bearer"},
    )


def login_redirect(request: Request, *, expired: bool) -> Response:
    """303 to the sign-in page, which comes back here (`next`) once signed in."""
    params = {
        "next": _safe_path(request.scope) + (f"?{request.url.query}" if request.url.query else "")
    }
    if expired:
        params["expired"] = "1"
    return Response(
        status_code=303,
        headers={"Location": f"{LOGIN_PAGE}?{urlencode(params)}", "Cache-Control": "no-store"},
    )


def _csrf_failed(request: Request) -> Response:
    return error_response(
        request, 403, "CSRF_FAILED", "missing or wrong X-CSRF-Token header", hint=CSRF_HINT
    )


def _principal(identity: Identity, via: Via) -> Principal:
    return Principal(
        org_id=identity.org_id,
        role=identity.role,
        user_id=identity.user_id,
        via=via,
        token_id=identity.token_id,
        session_id=identity.session_id,
    )


@dataclass(frozen=True)
class AccessPolicy:
    """The settings that decide who gets in without credentials."""

    auto_login: bool
    public_read_prefixes: tuple[str, ...]
    session_seconds: int
    # The SHA-256 of VALUERANK_METRICS_TOKEN: the token itself is kept nowhere (no repr).
    metrics_token_digest: str | None = field(default=None, repr=False)

    @classmethod
    def from_settings(cls, settings: Settings) -> AccessPolicy:
        metrics = settings.metrics_token.get_secret_value() if settings.metrics_token else None
        if metrics is not None and len(metrics.strip()) < MIN_METRICS_TOKEN_LENGTH:
            raise InvalidInputError(  # never repeats the value
                f"VALUERANK_METRICS_TOKEN is shorter than {MIN_METRICS_TOKEN_LENGTH} characters",
                hint="use a random secret, e.g. `openssl rand -hex 32`",
            )
        return cls(
            settings.auto_login,
            settings.public_read_prefixes,
            int(settings.session_ttl_hours * 3600),
            digest(metrics) if metrics is not None else None,
        )

    def metrics_scraper(self, method: str, path: str, bearer: str | None) -> bool:
        """A read of /metrics with the metrics token (compared by digest, in constant time)."""
        if bearer is None or self.metrics_token_digest is None:
            return False
        if method not in ("GET", "HEAD") or path != METRICS_PATH:
            return False
        return same_secret(digest(bearer), self.metrics_token_digest)

    def public_read(self, method: str, path: str) -> bool:
        """A read of a path at or below one of the prefixes (whole path segments only:
        `/api/runs` opens `/api/runs/x`, not `/api/runsx`)."""
        return method in ("GET", "HEAD") and any(
            path == prefix.rstrip("/") or path.startswith(prefix.rstrip("/") + "/")
            for prefix in self.public_read_prefixes
        )


class AuthMiddleware:
    """Sets `scope["state"]["principal"]` (and `csrf_token` for browsers) or refuses."""

    def __init__(
        self,
        app: ASGIApp,
        db: Database,
        org_id: str,
        policy: AccessPolicy,
        limiter: RateLimiter,
        tokens: TokenCache,
    ) -> None:
        self.app = app
        self.db = db
        self.org_id = org_id  # the install's default organisation
        self.policy = policy
        self.limiter = limiter
        self.tokens = tokens
        self._local_admin_id: str | None = None

    async def _local_admin(self) -> Principal:
        if self._local_admin_id is None:
            async with self.db.transaction(immediate=True) as conn:
                self._local_admin_id = await ensure_local_admin(conn, self.org_id)
        return Principal(
            org_id=self.org_id, role=Role.ADMIN, user_id=self._local_admin_id, via="local"
        )

    async def _admit(
        self,
        principal: Principal,
        scope: Scope,
        receive: Receive,
        send: Send,
        csrf: str | None = None,
    ) -> None:
        state = scope.setdefault("state", {})
        state["principal"] = principal
        state["csrf_token"] = csrf
        await self.app(scope, receive, send)

    async def _count_failure(self, scope: Scope) -> Verdict:
        """A rejected credential counts against its address's standard limit."""
        return await self.limiter.hit(EndpointClass.STANDARD, f"addr:{client_host(scope)}")

    async def _refuse(self, request: Request, message: str, *, failed_credential: bool) -> Response:
        """The 401 (or, past the address's limit of failures, 429); a browser asking for a
        page without credentials is sent to the sign-in page instead."""
        if failed_credential:
            verdict = await self._count_failure(request.scope)
            if not verdict.allowed:
                return rate_limited_response(request, verdict)
        elif request.method in ("GET", "HEAD") and wants_html(request):
            expired = cookie_name(request.scope) in request.cookies
            return login_redirect(request, expired=expired)
        return _unauthorized(request, message)

    async def _jump(self, request: Request, given: str) -> Response:
        """`?token=`: a session from an API token, then the same URL without the token."""
        identity = await authenticate_token(self.db, given)
        if identity is None:
            return await self._refuse(request, "invalid access token", failed_credential=True)
        async with self.db.transaction(immediate=True) as conn:
            opened = await open_session(
                conn,
                identity.org_id,
                identity.user_id,
                ttl_seconds=self.policy.session_seconds,
                token_id=identity.token_id,
            )
        rest = [(k, v) for k, v in request.query_params.multi_items() if k != TOKEN_PARAM]
        location = _safe_path(request.scope) + (f"?{urlencode(rest)}" if rest else "")
        response = Response(
            status_code=303,
            headers={
                "Location": location,
                "Cache-Control": "no-store",
                "Referrer-Policy": "no-referrer",
            },
        )
        assert opened.identity.csrf_token is not None
        set_session_cookies(
            response,
            request.scope,
            opened.secret,
            opened.identity.csrf_token,
            self.policy.session_seconds,
        )
        return response

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        websocket = scope["type"] == "websocket"
        # What both kinds share (headers, cookies, query); a Request only for HTTP.
        request: Any = HTTPConnection(scope) if websocket else Request(scope, receive)
        method = "GET" if websocket else request.method
        if (method, scope["path"]) in OPEN_ROUTES or (
            method in ("GET", "HEAD") and scope["path"].startswith(STATIC_PREFIX)
        ):
            await self.app(scope, receive, send)
            return

        async def refuse(message: str, *, failed_credential: bool = False) -> None:
            if websocket:
                if failed_credential:
                    await self._count_failure(scope)
                await send({"type": "websocket.close", "code": 1008})
                return
            response = await self._refuse(request, message, failed_credential=failed_credential)
            await response(scope, receive, send)

        given = request.query_params.get(TOKEN_PARAM)
        if given is not None and not websocket and method in ("GET", "HEAD"):
            await (await self._jump(request, given))(scope, receive, send)
            return

        bearer = bearer_token(request)
        if self.policy.metrics_scraper(method, scope["path"], bearer):
            # Only /metrics' own check lets this principal through (see deps.MetricsReader).
            scraper = Principal(org_id=self.org_id, role=Role.VIEWER, via="metrics")
            await self._admit(scraper, scope, receive, send)
            return
        if bearer is not None:
            identity = await self.tokens.authenticate(bearer)
            if identity is None:
                await refuse("invalid credentials", failed_credential=True)
                return
            await self._admit(_principal(identity, "token"), scope, receive, send)
            return

        cookie = request.cookies.get(cookie_name(scope))
        if cookie:
            session = await authenticate_session(self.db, cookie)
            if session is not None:
                if websocket and not same_origin(scope):
                    await refuse("cross-origin WebSocket")
                    return
                if method not in SAFE_METHODS and not same_secret(
                    request.headers.get(CSRF_HEADER), session.csrf_token
                ):
                    await _csrf_failed(request)(scope, receive, send)
                    return
                principal = _principal(session, "session")
                await self._admit(principal, scope, receive, send, session.csrf_token)
                return

        if self.policy.auto_login and is_local_request(scope):
            await self._auto_login(request, method, scope, receive, send)
            return

        if self.policy.public_read(method, scope["path"]):
            anonymous = Principal(org_id=self.org_id, role=Role.VIEWER, via="anonymous")
            await self._admit(anonymous, scope, receive, send)
            return

        if scope["path"] == LOGIN_PAGE and method in ("GET", "HEAD"):
            await self.app(scope, receive, send)  # the sign-in form, to anyone
            return
        if cookie:
            await refuse("the session has expired or was signed out")
        else:
            await refuse("authentication required")

    async def _auto_login(
        self, request: Any, method: str, scope: Scope, receive: Receive, send: Send
    ) -> None:
        websocket = scope["type"] == "websocket"
        csrf = request.cookies.get(cookie_name(scope, CSRF_COOKIE))
        if websocket and not same_origin(scope):
            await send({"type": "websocket.close", "code": 1008})
            return
        if method not in SAFE_METHODS and not (
            same_origin(scope) and same_secret(request.headers.get(CSRF_HEADER), csrf)
        ):
            await _csrf_failed(request)(scope, receive, send)
            return
        principal = await self._local_admin()
        if websocket or csrf:
            await self._admit(principal, scope, receive, send, csrf)
            return
        # First visit: hand the page a CSRF token in the readable cookie.
        fresh = new_secret()
        await self._admit(principal, scope, receive, _with_csrf_cookie(send, scope, fresh), fresh)


def _with_csrf_cookie(send: Send, scope: Scope, csrf: str) -> Send:
    carrier = Response()
    set_csrf_cookie(carrier, scope, csrf, None)
    cookie = carrier.headers["set-cookie"]

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = MutableHeaders(scope=message)
            headers.append("set-cookie", cookie)
        await send(message)

    return sending


_TOKEN_IN_QUERY = re.compile(r"(?i)([?&]token=)[^&\s\"']*")
# Our API tokens wherever they are (a token pasted into another parameter): the prefix
# makes them recognisable.
_API_TOKEN = re.compile(re.escape(TOKEN_PREFIX) + r"[A-Za-z0-9_-]{16,}")


def redact(text: str) -> str:
    """`…?token=abc&x=1` → `…?token=[redacted]&x=1`; any `vrt_…` API token → `vrt_[redacted]`."""
    return _API_TOKEN.sub(TOKEN_PREFIX + "[redacted]", _TOKEN_IN_QUERY.sub(r"\1[redacted]", text))


class RedactTokenFilter(logging.Filter):
    """Removes `token=` query values and API tokens from log records (uvicorn's access log
    has the URL)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        return True
