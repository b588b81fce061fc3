"""Every failure answered in the envelope with the right status (or as an HTML page for a
browser asking for one of the UI's pages): our errors, routing, validation, the database."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from fastapi.routing import iter_route_contexts
from sqlalchemy.exc import DataError, DBAPIError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from valuerank.api.context import app_context
from valuerank.api.envelope import code_for_status, error_json
from valuerank.db import refused
from valuerank.definitions.errors import DefinitionError
from valuerank.errors import ValueRankError
from valuerank.formats.errors import FormatError

log = logging.getLogger("valuerank.api")

# (request, status, code, message, hint) → an HTML page; installed by the web UI.
ErrorPage = Callable[[Request, int, str, str, str | None], Response]

# Paths that always answer JSON (or plain text), whatever the client accepts.
MACHINE_PREFIXES = ("/api/", "/health", "/metrics", "/openapi.json", "/static/")


def wants_html(request: Request) -> bool:
    """A browser navigating to a page (not the API) gets errors as a page."""
    if request.url.path.startswith(MACHINE_PREFIXES):
        return False
    return "text/html" in request.headers.get("accept", "")


def error_response(
    request: Request,
    status_code: int,
    code: str,
    message: str,
    *,
    hint: str | None = None,
    details: Any = None,
    headers: dict[str, str] | None = None,
) -> Response:
    """The error as the envelope, or as the UI's error page when a browser asked for a page."""
    page = app_context(request.app).error_page
    if page is not None and wants_html(request):
        response = page(request, status_code, code, message, hint)
        for key, value in (headers or {}).items():
            response.headers[key] = value
        return response
    return error_json(status_code, code, message, hint=hint, details=details, headers=headers)


async def _valuerank_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ValueRankError)
    # Some errors carry headers of their own (e.g. Retry-After on RATE_LIMITED).
    headers: dict[str, str] | None = getattr(exc, "headers", None)
    return error_response(
        request, exc.http_status, exc.code, exc.message, hint=exc.hint, headers=headers
    )


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    status = exc.status_code
    if status == 404:
        message = f"not found: {request.url.path}"
    elif isinstance(exc.detail, str) and exc.detail:
        message = exc.detail
    else:
        message = _phrase(status)
    headers = dict(exc.headers) if exc.headers else None
    if status == 405:
        headers = {**(headers or {}), "Allow": allowed_methods(request)}
    code = getattr(exc, "code", None) or code_for_status(status)
    return error_response(request, status, code, message, headers=headers)


def allowed_methods(request: Request) -> str:
    """Every method some route of this path answers: Starlette's own 405 lists only those of
    the first route it tried, and a path often has one route per method."""
    path = request.url.path
    matching = [
        route
        for route in iter_route_contexts(request.app.routes)  # through included routers too
        if route.path
        and route.methods
        and getattr(route, "include_in_schema", True)
        and compile_path(route.path)[0].match(path)
    ]
    # A path of its own (`/api/runs/compare`) is documented apart from a template that also
    # matches it (`/api/runs/{run_id}`): its own methods, not the template's.
    literal = [route for route in matching if route.path == path]
    methods: set[str] = set()
    for route in literal or matching:
        methods |= route.methods or set()
    return ", ".join(sorted(methods))


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "error"


def _location(loc: Any) -> str:
    return ".".join(str(part) for part in loc) if isinstance(loc, list | tuple) else str(loc)


async def _validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    # The offending input is never echoed back: it may be a secret sent in the wrong place.
    details = [
        {"loc": _location(e.get("loc", ())), "msg": str(e.get("msg", "")), "type": e.get("type")}
        for e in exc.errors()
    ]
    first = details[0] if details else {"loc": "request", "msg": "invalid"}
    message = f"invalid request: {first['loc']}: {first['msg']}"
    return error_response(request, 422, "VALIDATION_ERROR", message, details=details)


async def _invalid_file(request: Request, exc: Exception) -> Response:
    # A definition/rubric the services could not parse: the same code as the CLI's, and the
    # message names the line and the fix.
    assert isinstance(exc, FormatError | DefinitionError)
    return error_response(request, 422, "INVALID_FILE", exc.render(), hint=exc.hint)


async def _database_error(request: Request, exc: Exception) -> Response:
    log.warning("database error on %s %s: %s", request.method, request.url.path, exc)
    return error_response(
        request,
        503,
        "DATABASE_UNAVAILABLE",
        "the database is unavailable",
        hint="check VALUERANK_DATABASE_URL and that the database server is running",
    )


# How long a client waits before asking again when every database connection of the process
# is busy: the pool's own wait (30 s) has already passed.
BUSY_RETRY_SECONDS = 1


async def _pool_exhausted(request: Request, exc: Exception) -> Response:
    # Every connection of this process's pool stayed busy for the pool's whole wait: the
    # database is up, this process is overloaded. A client may retry; an operator may give it
    # more connections or add processes.
    log.warning("no database connection free on %s %s: %s", request.method, request.url.path, exc)
    return error_response(
        request,
        503,
        "SERVER_BUSY",
        "every database connection of this server is busy",
        hint="retry shortly; operators: raise VALUERANK_DB_POOL_SIZE or add server processes",
        headers={"Retry-After": str(BUSY_RETRY_SECONDS)},
    )


async def _refused_value(request: Request, exc: Exception) -> Response:
    # The database is up: it refused a value of this request (a NUL, a number past the
    # column's range) that the request's checks missed. Bad input, not an outage.
    assert isinstance(exc, DataError)
    log.warning("database refused a value on %s %s: %s", request.method, request.url.path, exc)
    message = refused.refused_value_message(exc)
    return error_response(request, 422, refused.CODE, message, hint=refused.HINT)


# The database's failures and their answers, the most specific first (a DataError is a
# DBAPIError, as is an OperationalError).
_DATABASE_FAILURES: tuple[
    tuple[type[Exception], Callable[[Request, Exception], Awaitable[Response]]], ...
] = (
    (DataError, _refused_value),  # a DBAPIError, but the client's
    (PoolTimeoutError, _pool_exhausted),
    (OperationalError, _database_error),
    (DBAPIError, _database_error),
)


async def _unexpected_error(request: Request, exc: Exception) -> Response:
    # Also what a middleware raises (authentication reads tokens and sessions), which the
    # typed handlers do not see: a database failure there keeps its answer.
    answer = _database_answer(exc)
    if answer is not None:
        return await answer(request, exc)
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return error_response(request, 500, "INTERNAL_ERROR", "internal server error")


def _database_answer(
    exc: Exception,
) -> Callable[[Request, Exception], Awaitable[Response]] | None:
    return next((answer for kind, answer in _DATABASE_FAILURES if isinstance(exc, kind)), None)


class DatabaseFailureMiddleware:
    """Answers a database failure raised in a middleware (authentication reads tokens and
    sessions) with its typed answer. Starlette's outermost error handler answers too but then
    raises the exception again for the server to log: every 503 of an outage logged a whole
    "Exception in ASGI application" traceback. Anything else goes on up as before."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking)
        except Exception as exc:
            answer = _database_answer(exc)
            if answer is None or started:
                raise
            response = await answer(Request(scope, receive), exc)
            await response(scope, receive, send)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(ValueRankError, _valuerank_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(FormatError, _invalid_file)
    app.add_exception_handler(DefinitionError, _invalid_file)
    for kind, answer in _DATABASE_FAILURES:
        app.add_exception_handler(kind, answer)
    app.add_exception_handler(Exception, _unexpected_error)
