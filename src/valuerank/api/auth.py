"""Authentication, on by default, Jupyter-style: one access token per server.

The token is `VALUERANK_API_TOKEN`, or a random `secrets.token_urlsafe(32)` drawn at start and
shown once, in the URL `valuerank serve` prints on the user's own terminal. It is accepted as
`Authorization: Bearer <token>`; a browser opening any page with `?token=<token>` gets a
session cookie (HttpOnly, SameSite=Strict, Secure over HTTPS) and is redirected to the same URL
without the token. The cookie holds an HMAC of the token, not the token, and is named after
the server's port, so servers on one host do not overwrite each other's. Comparisons are
constant-time. `/health` is the only open route; everything else, unknown routes included,
answers 401 UNAUTHORIZED without a valid credential. The token is never logged: the access
log's query strings go through `RedactTokenFilter`.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
from urllib.parse import urlencode

from starlette.requests import HTTPConnection, Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from valuerank.accounts.roles import Role
from valuerank.api.deps import Principal
from valuerank.api.errors import error_response
from valuerank.config import Settings
from valuerank.errors import InvalidInputError

TOKEN_PARAM = "token"
COOKIE_PREFIX = "valuerank_session"
OPEN_PATHS = frozenset({"/health"})
MIN_TOKEN_LENGTH = 16
_SESSION_CONTEXT = b"valuerank-session-v1"
UNAUTHORIZED_HINT = (
    "send `Authorization: Bearer <token>`, or open the URL `valuerank serve` printed "
    "(it ends with ?token=…)"
)


def generate_token() -> str:
    return secrets.token_urlsafe(32)


def resolve_access_token(settings: Settings) -> str:
    """VALUERANK_API_TOKEN if set (at least 16 characters), else a fresh random token."""
    if settings.api_token is None:
        return generate_token()
    token = settings.api_token.get_secret_value().strip()
    if len(token) < MIN_TOKEN_LENGTH:
        raise InvalidInputError(
            f"VALUERANK_API_TOKEN is shorter than {MIN_TOKEN_LENGTH} characters",
            hint="unset it to get a random token, or use `python -c "
            '"import secrets; print(secrets.token_urlsafe(32))"`',
        )
    return token


class AccessToken:
    """The server's token and the session-cookie value derived from it."""

    def __init__(self, token: str) -> None:
        if not token:
            raise ValueError("the access token must not be empty")
        self._token = token.encode()
        self._session = hmac.new(self._token, _SESSION_CONTEXT, hashlib.sha256).hexdigest()

    def __repr__(self) -> str:
        return "AccessToken(<hidden>)"

    @property
    def session_value(self) -> str:
        return self._session

    def matches(self, candidate: str | None) -> bool:
        if candidate is None:
            return False
        return hmac.compare_digest(candidate.encode(), self._token)

    def matches_session(self, candidate: str | None) -> bool:
        if candidate is None:
            return False
        return hmac.compare_digest(candidate.encode(), self._session.encode())


def cookie_name(scope: Scope) -> str:
    server = scope.get("server")
    port: int | None = server[1] if server else None
    return f"{COOKIE_PREFIX}_{port}" if port else COOKIE_PREFIX


def bearer_token(request: HTTPConnection) -> str | None:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def _safe_path(scope: Scope) -> str:
    """The request's own path for a redirect: never `//host` or `/\\host` (open redirect)."""
    raw = scope.get("raw_path")
    path: str = raw.decode("latin-1") if raw else scope["path"]
    return "/" + path.lstrip("/\\")


def _login_redirect(request: Request, token: AccessToken) -> Response:
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
    response.set_cookie(
        cookie_name(request.scope),
        token.session_value,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )
    return response


def _unauthorized(request: Request, message: str) -> Response:
    return error_response(
        request,
        401,
        "UNAUTHORIZED",
        message,
        hint=UNAUTHORIZED_HINT,
        headers={"WWW-Authenticate": "Bearer"},
    )


class AuthMiddleware:
    """Lets a request through only with the Bearer token or the session cookie."""

    def __init__(self, app: ASGIApp, token: AccessToken, org_id: str) -> None:
        self.app = app
        self.token = token
        self.org_id = org_id

    def principal(self, request: HTTPConnection) -> Principal | None:
        """The server's own access token (or its session cookie) acts as the install's admin."""
        if self.token.matches(bearer_token(request)):
            return Principal(org_id=self.org_id, role=Role.ADMIN, via="token")
        if self.token.matches_session(request.cookies.get(cookie_name(request.scope))):
            return Principal(org_id=self.org_id, role=Role.ADMIN, via="session")
        return None

    async def _admit(
        self, principal: Principal, scope: Scope, receive: Receive, send: Send
    ) -> None:
        scope.setdefault("state", {})["principal"] = principal
        await self.app(scope, receive, send)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":  # a WebSocket handshake has no body to receive
            principal = self.principal(HTTPConnection(scope))
            if principal is not None:
                await self._admit(principal, scope, receive, send)
            else:
                await send({"type": "websocket.close", "code": 1008})
            return
        request = Request(scope, receive)
        principal = self.principal(request)
        given = request.query_params.get(TOKEN_PARAM)
        if given is not None and request.method in ("GET", "HEAD"):
            if self.token.matches(given):
                response = _login_redirect(request, self.token)
            else:
                response = _unauthorized(request, "invalid access token")
            await response(scope, receive, send)
            return
        if principal is not None:
            await self._admit(principal, scope, receive, send)
            return
        has_credential = bearer_token(request) is not None or cookie_name(scope) in request.cookies
        message = "invalid credentials" if has_credential else "authentication required"
        await _unauthorized(request, message)(scope, receive, send)


_TOKEN_IN_QUERY = re.compile(r"(?i)([?&]token=)[^&\s\"']*")


def redact(text: str) -> str:
    """`…?token=abc&x=1` → `…?token=[redacted]&x=1`."""
    return _TOKEN_IN_QUERY.sub(r"\1[redacted]", text)


class RedactTokenFilter(logging.Filter):
    """Removes `token=` query values from log records (uvicorn's access log has the URL)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        return True
