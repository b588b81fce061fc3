"""Request bodies larger than a limit are refused with 413 PAYLOAD_TOO_LARGE: at once when
Content-Length says so, otherwise as soon as the bytes read while streaming pass the limit.

The upload routes (`UPLOAD_PATHS`: files of the original CLI, run and workspace ZIPs) have a
limit of their own (the `max_upload_bytes` setting, 50 MiB by default); every other route
takes JSON and keeps `MAX_BODY_BYTES`.
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from valuerank.api.errors import error_response

MAX_BODY_BYTES = 1024 * 1024  # 1 MiB
# The longest text a field of a JSON body may document (maxLength). JSON can spend 12 bytes
# on one character (an escaped surrogate pair, `\ud83d\ude00`), and a text one character too
# long must still reach validation (422 naming the field) rather than the body limit (413):
# 12 bytes a character, with room to spare for the rest of the body.
MAX_JSON_TEXT = (MAX_BODY_BYTES - 64 * 1024) // 12
MAX_UPLOAD_BYTES = 50 * 1024 * 1024  # the default of the `max_upload_bytes` setting
UPLOAD_PATHS = frozenset(
    {"/api/import", "/api/import/table", "/api/definitions/import", "/api/rubrics/import"}
)


class PayloadTooLarge(HTTPException):
    """Raised from `receive()` when a streamed body passes the limit. An HTTPException, so
    FastAPI's body parsing re-raises it (any other error there becomes a 400) and the app's
    handler answers 413 in the envelope; this middleware answers it if nothing else did."""

    code = "PAYLOAD_TOO_LARGE"

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body larger than {limit} bytes")


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class BodyLimitMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        max_body_bytes: int = MAX_BODY_BYTES,
        max_upload_bytes: int = MAX_UPLOAD_BYTES,
    ) -> None:
        self.app = app
        self.default_limit = max_body_bytes
        self.upload_limit = max_upload_bytes

    def limit_for(self, scope: Scope) -> int:
        return self.upload_limit if scope.get("path") in UPLOAD_PATHS else self.default_limit

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        request = Request(scope, receive)
        response = error_response(
            request,
            413,
            PayloadTooLarge.code,
            f"request body larger than {limit} bytes",
            headers={"Connection": "close"},
        )
        await response(scope, receive, send)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope)
        declared = _declared_length(scope)
        if declared is not None and declared > limit:
            await self._refuse(scope, receive, send, limit)
            return

        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise PayloadTooLarge(limit)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        too_large = False
        try:
            await self.app(scope, limited_receive, tracking_send)
        except* PayloadTooLarge:  # `except*`: also when the body was read in a task group
            too_large = True
        # Once the app has started its answer nothing else can be sent: the answer is cut.
        if too_large and not started:
            await self._refuse(scope, receive, send, limit)
