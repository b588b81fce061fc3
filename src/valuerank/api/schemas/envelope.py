"""The envelopes of /openapi.json: what every answer looks like, as pydantic models.

Routes build their answers with `api.envelope` (plain dicts, often served as pre-encoded
bytes), so these models document and are never used to serialise: schemathesis and the
contract tests check real answers against them. Every model forbids fields it does not list
(`additionalProperties: false`), so an answer that grows a field its model lacks fails those
tests instead of drifting from the documentation.

- success: `{"success": true, "data": <the route's model>, "timestamp", "cached"}` (the
  consensus and analysis reads add `debug` with `?debug=true`);
- every 4xx and 5xx: `{"success": false, "error", "code", "hint"?, "details"?, "timestamp"}`
  (`ERROR_RESPONSES`, set on the app so that every route has it, also FastAPI's 422);
- routes that declare no model of their own get `SuccessEnvelope` (any `data`) from
  `document_envelopes`, so no JSON answer is documented as `{}`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict, Field

T = TypeVar("T")
D = TypeVar("D")

REF = "#/components/schemas/"


class Out(BaseModel):
    """A documented answer (or part of one): every field it has, and no other."""

    model_config = ConfigDict(extra="forbid")


class Envelope(Out, Generic[T]):
    """A success answer around the route's data."""

    success: Literal[True]
    data: T
    timestamp: datetime = Field(description="When the answer was made (UTC).")
    cached: bool = Field(description="True when the data came from the server's cache.")


class Debugged(Envelope[T], Generic[T, D]):
    """A success answer of a read that shows its timings with `?debug=true`."""

    debug: D | None = Field(default=None, description="Only with `?debug=true`.")


class SuccessEnvelope(Out):
    """A success answer (the route documents no model of its `data`)."""

    success: Literal[True]
    data: Any
    timestamp: datetime
    cached: bool


class ErrorEnvelope(Out):
    """Every failure: a message, a stable UPPER_SNAKE code and, when there is one, what to do."""

    success: Literal[False]
    error: str = Field(description="What went wrong, for people.")
    code: str = Field(
        description="Stable, for programs: e.g. NOT_FOUND, RUN_NOT_FOUND, VALIDATION_ERROR, "
        "FORBIDDEN, RATE_LIMITED, TASK_NOT_FOUND, DATABASE_ERROR.",
        pattern=r"^[A-Z][A-Z0-9_]*$",
    )
    hint: str | None = Field(default=None, description="What to do about it.")
    details: Any = Field(
        default=None,
        description="VALIDATION_ERROR: a list of {loc, msg, type}, one per problem.",
    )
    timestamp: datetime


_ERROR = {"model": ErrorEnvelope}
# Set on the app (FastAPI(responses=…)), so every route documents them; a `4XX` entry also
# keeps FastAPI from documenting its own 422 body, which this API never sends.
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    "4XX": {
        **_ERROR,
        "description": "A client error in the error envelope: 400 bad input, 401 no or bad "
        "credentials, 403 a weaker role, 404 unknown or another organisation's id, 409 a "
        "conflict, 413 too large, 422 invalid (VALIDATION_ERROR lists each problem in "
        "`details`), 429 rate limited (with Retry-After).",
    },
    "5XX": {
        **_ERROR,
        "description": "A server error in the error envelope (no stack trace): 500, 503 "
        "DATABASE_UNAVAILABLE, DATABASE_ERROR or SECRET_KEY_MISSING (the server is not set "
        "up for it), SERVER_BUSY (every database connection busy; with Retry-After), 504 "
        "CACHE_ERROR.",
    },
}


def also(model: Any, *statuses: int, description: str = "") -> dict[int | str, dict[str, Any]]:
    """`responses=` for success statuses a route answers besides its main one (e.g. 200 when
    a create finds the thing already stored, 202 when work was queued)."""
    return {s: {"model": model, "description": description or "Success"} for s in statuses}


def _fill(operation: dict[str, Any]) -> None:
    for status, response in operation.get("responses", {}).items():
        if not str(status).startswith("2"):
            continue
        media = response.get("content", {}).get("application/json")
        if media is not None and not media.get("schema"):
            media["schema"] = {"$ref": REF + SuccessEnvelope.__name__}


def document_envelopes(app: FastAPI) -> None:
    """Make `app.openapi()` document `SuccessEnvelope` for every JSON success answer that has
    no schema (a route returning a JSONResponse without `response_model`)."""
    build: Callable[[], dict[str, Any]] = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = build()
        for item in schema.get("paths", {}).values():
            for operation in item.values():
                if isinstance(operation, dict):
                    _fill(operation)
        schemas = schema.setdefault("components", {}).setdefault("schemas", {})
        schemas[SuccessEnvelope.__name__] = SuccessEnvelope.model_json_schema(
            ref_template=REF + "{model}", mode="serialization"
        )
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
