"""The JSON envelope of every API answer.

Success: `{"success": true, "data": …, "timestamp": ISO-8601, "cached": false}`.
Error: `{"success": false, "error": message, "code": "UPPER_SNAKE", "timestamp": …}` (plus
`hint` and `details` when there are some), sent with the matching HTTP status.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any

from fastapi.responses import JSONResponse


def utc_timestamp() -> str:
    """Now in ISO-8601, UTC, millisecond precision: `2025-01-31T12:00:00.000Z`."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def success(data: Any, *, cached: bool = False) -> dict[str, Any]:
    return {"success": True, "data": data, "timestamp": utc_timestamp(), "cached": cached}


def success_json(
    data_json: bytes, *, cached: bool = False, extra: dict[str, Any] | None = None
) -> bytes:
    """The success envelope as bytes around data already encoded as JSON (a cached answer is
    served without decoding and encoding it again); `extra` adds top-level fields."""
    tail: dict[str, Any] = {"timestamp": utc_timestamp(), "cached": cached, **(extra or {})}
    rest = json.dumps(tail, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return b'{"success":true,"data":' + data_json + b"," + rest[1:]


def failure(
    message: str, code: str, *, hint: str | None = None, details: Any = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "success": False,
        "error": message,
        "code": code,
        "timestamp": utc_timestamp(),
    }
    if hint:
        body["hint"] = hint
    if details is not None:
        body["details"] = details
    return body


def code_for_status(status: int) -> str:
    """UPPER_SNAKE name of an HTTP status: 404 → NOT_FOUND, 413 → PAYLOAD_TOO_LARGE."""
    overrides = {413: "PAYLOAD_TOO_LARGE", 500: "INTERNAL_ERROR"}
    if status in overrides:
        return overrides[status]
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        return "HTTP_ERROR"
    return "".join(c if c.isalnum() else "_" for c in phrase.upper()).strip("_")


def ok(
    data: Any,
    *,
    status_code: int = 200,
    cached: bool = False,
    debug: dict[str, Any] | None = None,
) -> JSONResponse:
    """The success envelope; `debug` (a read's timings, `?debug=true`) is added when given."""
    body = success(data, cached=cached)
    if debug is not None:
        body["debug"] = debug
    return JSONResponse(body, status_code=status_code)


def error_json(
    status_code: int,
    code: str,
    message: str,
    *,
    hint: str | None = None,
    details: Any = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    return JSONResponse(
        failure(message, code, hint=hint, details=details),
        status_code=status_code,
        headers=headers,
    )
