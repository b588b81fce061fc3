"""The browser session's two cookies: the session secret (HttpOnly) and the CSRF token the
page's JavaScript reads and echoes in `X-CSRF-Token`. Both are SameSite=Strict, Secure over
HTTPS, and named after the server's port so servers on one host keep theirs apart."""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.responses import Response
from starlette.types import Message, Scope, Send

SESSION_COOKIE = "valuerank_session"
CSRF_COOKIE = "valuerank_csrf"
CSRF_HEADER = "x-csrf-token"


def cookie_name(scope: Scope, base: str = SESSION_COOKIE) -> str:
    """`valuerank_session_<port>` (or `valuerank_csrf_<port>`): one per server on a host."""
    server = scope.get("server")
    port: int | None = server[1] if server else None
    return f"{base}_{port}" if port else base


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


def with_csrf_cookie(send: Send, scope: Scope, csrf: str) -> Send:
    """`send` that adds the readable CSRF cookie (no max-age) to the response it starts."""
    carrier = Response()
    set_csrf_cookie(carrier, scope, csrf, None)
    cookie = carrier.headers["set-cookie"]

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = MutableHeaders(scope=message)
            headers.append("set-cookie", cookie)
        await send(message)

    return sending
