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

Here: the middleware, one step per rule above. Its parts live apart: the cookies
(`api/cookies.py`), where a request comes from (`api/origin.py`), the policy read from the
settings (`api/access_policy.py`) and the log redaction (`api/redaction.py`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlencode

from starlette.requests import HTTPConnection, Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from valuerank.accounts import (
    Identity,
    Role,
    authenticate_session,
    authenticate_token,
    ensure_local_admin,
    open_session,
)
from valuerank.accounts.hashing import new_secret, same_secret
from valuerank.api.access_policy import METRICS_PATH, MIN_METRICS_TOKEN_LENGTH, AccessPolicy
from valuerank.api.cookies import (
    CSRF_COOKIE,
    CSRF_HEADER,
    SESSION_COOKIE,
    clear_session_cookies,
    cookie_name,
    set_csrf_cookie,
    set_session_cookies,
    with_csrf_cookie,
)
from valuerank.api.deps import Principal, Via
from valuerank.api.errors import error_response, wants_html
from valuerank.api.origin import FORWARDING_HEADERS, is_local_request, is_loopback_host, same_origin
from valuerank.api.ratelimit import (
    EndpointClass,
    RateLimiter,
    Verdict,
    client_host,
    rate_limited_response,
)
from valuerank.api.redaction import RedactTokenFilter, redact
from valuerank.api.token_cache import TokenCache
from valuerank.db import Database

# The names this module held before its parts moved out, still importable from here.
__all__ = [
    "CSRF_COOKIE",
    "CSRF_HEADER",
    "FORWARDING_HEADERS",
    "METRICS_PATH",
    "MIN_METRICS_TOKEN_LENGTH",
    "SESSION_COOKIE",
    "AccessPolicy",
    "AuthMiddleware",
    "RedactTokenFilter",
    "bearer_token",
    "clear_session_cookies",
    "cookie_name",
    "is_local_request",
    "is_loopback_host",
    "login_redirect",
    "redact",
    "same_origin",
    "set_csrf_cookie",
    "set_session_cookies",
]

TOKEN_PARAM = "token"
OPEN_PATHS = frozenset({"/health", "/api/ready"})  # liveness and readiness probes
OPEN_ROUTES = frozenset({("POST", "/api/auth/login")})
STATIC_PREFIX = "/static/"  # stylesheets, scripts, icons: nothing secret, needed by /login
LOGIN_PAGE = "/login"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
UNAUTHORIZED_HINT = (
    "send `Authorization: Bearer <API token>` (`valuerank tokens create`), sign in with "
    "POST /api/auth/login, or open /?token=<API token> once in a browser"
)
CSRF_HINT = (
    "send the session's CSRF token (the csrf_token of /api/auth/me, also in the readable "
    "valuerank_csrf cookie) as X-CSRF-Token; scripts use a Bearer token instead"
)


def bearer_token(request: HTTPConnection) -> str | None:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def _safe_path(scope: Scope) -> str:
    """The request's own path for a redirect: never `//host` or `/\\host` (open redirect)."""
    raw = scope.get("raw_path")
    path: str = raw.decode("latin-1") if raw else scope["path"]
    return "/" + path.lstrip("/\\")


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
class _Call:
    """One request on its way through the steps: what HTTP and WebSocket share (headers,
    cookies, query); `request` is a `Request` only for HTTP."""

    scope: Scope
    receive: Receive
    send: Send
    request: Any
    method: str  # a WebSocket's handshake counts as GET
    websocket: bool
    bearer: str | None

    @classmethod
    def of(cls, scope: Scope, receive: Receive, send: Send) -> _Call:
        websocket = scope["type"] == "websocket"
        request: Any = HTTPConnection(scope) if websocket else Request(scope, receive)
        method = "GET" if websocket else request.method
        return cls(scope, receive, send, request, method, websocket, bearer_token(request))

    @property
    def path(self) -> str:
        path: str = self.scope["path"]
        return path

    @property
    def session_cookie(self) -> str | None:
        cookie: str | None = self.request.cookies.get(cookie_name(self.scope))
        return cookie

    @property
    def reads(self) -> bool:
        return self.method in ("GET", "HEAD")

    async def respond(self, response: Response) -> None:
        await response(self.scope, self.receive, self.send)


# A step admits, refuses or answers the request (True), or leaves it to the next (False).
Step = Callable[[_Call], Awaitable[bool]]


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
        # The module docstring's rules 1-5, in order, then the sign-in page.
        self._steps: tuple[Step, ...] = (
            self._token_jump,
            self._metrics_scraper,
            self._bearer,
            self._session,
            self._auto_login,
            self._public_read,
            self._login_page,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        call = _Call.of(scope, receive, send)
        if _open_route(call):
            await self.app(scope, receive, send)
            return
        for step in self._steps:
            if await step(call):
                return
        if call.session_cookie:
            await self._refuse(call, "the session has expired or was signed out")
        else:
            await self._refuse(call, "authentication required")

    # -- the steps ---------------------------------------------------------------------------

    async def _token_jump(self, call: _Call) -> bool:
        """`?token=`: a session from an API token, then the same URL without the token."""
        given = call.request.query_params.get(TOKEN_PARAM)
        if given is None or call.websocket or not call.reads:
            return False
        await call.respond(await self._jump(call.request, given))
        return True

    async def _metrics_scraper(self, call: _Call) -> bool:
        if not self.policy.metrics_scraper(call.method, call.path, call.bearer):
            return False
        # Only /metrics' own check lets this principal through (see deps.MetricsReader).
        scraper = Principal(org_id=self.org_id, role=Role.VIEWER, via="metrics")
        await self._admit(scraper, call)
        return True

    async def _bearer(self, call: _Call) -> bool:
        """A Bearer token decides alone: a wrong one is refused, never a fall-back."""
        if call.bearer is None:
            return False
        identity = await self.tokens.authenticate(call.bearer)
        if identity is None:
            await self._refuse(call, "invalid credentials", failed_credential=True)
        else:
            await self._admit(_principal(identity, "token"), call)
        return True

    async def _session(self, call: _Call) -> bool:
        """A live session cookie; unsafe methods echo its CSRF token."""
        cookie = call.session_cookie
        if not cookie:
            return False
        session = await authenticate_session(self.db, cookie)
        if session is None:
            return False
        if call.websocket and not same_origin(call.scope):
            await self._refuse(call, "cross-origin WebSocket")
        elif call.method not in SAFE_METHODS and not same_secret(
            call.request.headers.get(CSRF_HEADER), session.csrf_token
        ):
            await call.respond(_csrf_failed(call.request))
        else:
            await self._admit(_principal(session, "session"), call, session.csrf_token)
        return True

    async def _auto_login(self, call: _Call) -> bool:
        """The local admin, for a request from this machine; unsafe methods echo the readable
        CSRF cookie, which a first visit is handed."""
        if not (self.policy.auto_login and is_local_request(call.scope)):
            return False
        csrf = call.request.cookies.get(cookie_name(call.scope, CSRF_COOKIE))
        if call.websocket and not same_origin(call.scope):
            await call.send({"type": "websocket.close", "code": 1008})
            return True
        if call.method not in SAFE_METHODS and not (
            same_origin(call.scope) and same_secret(call.request.headers.get(CSRF_HEADER), csrf)
        ):
            await call.respond(_csrf_failed(call.request))
            return True
        principal = await self._local_admin()
        if call.websocket or csrf:
            await self._admit(principal, call, csrf)
            return True
        # First visit: hand the page a CSRF token in the readable cookie.
        fresh = new_secret()
        handing = replace(call, send=with_csrf_cookie(call.send, call.scope, fresh))
        await self._admit(principal, handing, fresh)
        return True

    async def _public_read(self, call: _Call) -> bool:
        if not self.policy.public_read(call.method, call.path):
            return False
        anonymous = Principal(org_id=self.org_id, role=Role.VIEWER, via="anonymous")
        await self._admit(anonymous, call)
        return True

    async def _login_page(self, call: _Call) -> bool:
        """The sign-in form, to anyone (with no principal)."""
        if call.path != LOGIN_PAGE or not call.reads:
            return False
        await self.app(call.scope, call.receive, call.send)
        return True

    # -- what the steps share ----------------------------------------------------------------

    async def _local_admin(self) -> Principal:
        if self._local_admin_id is None:
            async with self.db.transaction(immediate=True) as conn:
                self._local_admin_id = await ensure_local_admin(conn, self.org_id)
        return Principal(
            org_id=self.org_id, role=Role.ADMIN, user_id=self._local_admin_id, via="local"
        )

    async def _admit(self, principal: Principal, call: _Call, csrf: str | None = None) -> None:
        state = call.scope.setdefault("state", {})
        state["principal"] = principal
        state["csrf_token"] = csrf
        await self.app(call.scope, call.receive, call.send)

    async def _count_failure(self, scope: Scope) -> Verdict:
        """A rejected credential counts against its address's standard limit."""
        return await self.limiter.hit(EndpointClass.STANDARD, f"addr:{client_host(scope)}")

    async def _refuse(self, call: _Call, message: str, *, failed_credential: bool = False) -> None:
        """A WebSocket is closed (1008); HTTP gets its refusal."""
        if call.websocket:
            if failed_credential:
                await self._count_failure(call.scope)
            await call.send({"type": "websocket.close", "code": 1008})
            return
        await call.respond(
            await self._refusal(call.request, message, failed_credential=failed_credential)
        )

    async def _refusal(
        self, request: Request, message: str, *, failed_credential: bool
    ) -> Response:
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
        """The `?token=` jump's answer: a 303 setting the session's cookies."""
        identity = await authenticate_token(self.db, given)
        if identity is None:
            return await self._refusal(request, "invalid access token", failed_credential=True)
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


def _open_route(call: _Call) -> bool:
    """The login form's POST and the static files: open to anyone, no principal set."""
    return (call.method, call.path) in OPEN_ROUTES or (
        call.reads and call.path.startswith(STATIC_PREFIX)
    )
