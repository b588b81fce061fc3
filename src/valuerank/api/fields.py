"""Constraints shared by the request models of several routers, and the rules every request's
input obeys before it reaches the database.

PostgreSQL stores no NUL character in text (nor takes one as a parameter), and its `integer`
columns hold 32 bits: such input is the client's mistake, refused as 422 VALIDATION_ERROR
naming the field, on both databases, instead of failing in the driver. Two mechanisms cover
every route, present and future:

- `Body`, the base of every JSON request body: no string anywhere in it (nested lists and
  dicts too) holds a NUL, and its schema says so (`pattern` on each string);
- `refuse_nul_parameters`, a dependency of the whole app: no path or query parameter holds a
  NUL; `document_parameters` adds the same `pattern` to their schemas.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, ClassVar

from fastapi import FastAPI, Query
from fastapi.exceptions import RequestValidationError, WebSocketRequestValidationError
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    SecretStr,
    ValidationInfo,
    field_validator,
)
from pydantic_core import PydanticCustomError
from starlette.requests import HTTPConnection

# Text without NUL characters: no file or name holds one, and PostgreSQL cannot store one
# (nor take one as a query parameter).
NO_NUL = r"^[^\x00]*$"
NUL_MESSAGE = "must not contain a NUL character"
# The characters Python's str.strip() and str.isspace() take for whitespace, spelled out:
# a pattern's `\s` differs between regex engines (ECMA's lacks \x1c-\x1f and \x85).
SPACE = r"\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
# Text with something besides whitespace (and no NUL): what the services accept as a name
# once they strip it.
NOT_BLANK = rf"^[^\x00]*[^{SPACE}\x00][^\x00]*$"

# The largest value of an `Integer` column (PostgreSQL's `integer`), e.g. an event's seq.
INT32_MAX = 2**31 - 1

# The filters of the lists of versioned things (definitions, rubrics).
NameFilter = Annotated[
    str | None, Query(max_length=300, pattern=NO_NUL, description="Part of the name (any case).")
]
LabelFilter = Annotated[
    str | None, Query(max_length=100, pattern=NO_NUL, description="This version label.")
]


def whole_number(value: Any) -> Any:
    """20.0 → 20: the before-validator of integer fields (WholeNumber)."""
    # JSON Schema's `integer` holds 20.0 as well as 20 (a number without a fraction), and
    # JSON clients may send either; strict models would refuse the float.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# An integer field of a request body: 20.0 is taken as 20 (booleans and "20" stay refused).
WholeNumber = Annotated[int, BeforeValidator(whole_number)]


def _iso_only(value: Any) -> Any:
    """Refuse a bare number: pydantic would read `0.5` as a Unix time, but the schema says
    `format: date-time` (ISO-8601)."""
    if isinstance(value, str):
        try:
            float(value)
        except ValueError:
            return value
        raise PydanticCustomError("datetime_iso", "expected an ISO-8601 date-time")
    return value


# A date-time query parameter: ISO-8601 only, as documented (naive means UTC).
IsoDateTime = Annotated[datetime, BeforeValidator(_iso_only)]


def sequence_number(text: str) -> int:
    """A WebSocket's `?after=`: an event's seq, within its column (ValueError if not one)."""
    if not text.isdecimal() or len(text) > 10 or int(text) > INT32_MAX:
        raise ValueError(f"after must be a sequence number (an integer from 0 to {INT32_MAX})")
    return int(text)


def has_nul(value: Any) -> bool:
    """True if `value`, or any string inside it (keys included), holds a NUL character."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, SecretStr):
        return "\x00" in value.get_secret_value()
    if isinstance(value, dict):
        return any(has_nul(k) or has_nul(v) for k, v in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        return any(has_nul(v) for v in value)
    return False


def forbid_nul_in_schema(schema: dict[str, Any]) -> None:
    """Give every free-text string of a JSON schema the NO_NUL pattern (those with a pattern,
    a format or a set of values of their own keep it); `$ref`s are left to their models."""
    kinds = schema.get("type")
    is_text = kinds == "string" or (isinstance(kinds, list) and "string" in kinds)
    # A secret (format password) is free text too; other formats never match a NUL.
    secret = schema.get("format", "password") == "password"
    if is_text and secret and not {"pattern", "enum", "const"} & schema.keys():
        schema["pattern"] = NO_NUL
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for part in schema.get(key, ()):
            forbid_nul_in_schema(part)
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            forbid_nul_in_schema(schema[key])
    for part in schema.get("properties", {}).values():
        forbid_nul_in_schema(part)


def _document_body(schema: dict[str, Any], model: type[BaseModel]) -> None:
    """Document the NUL refusal on every text field but the whole files (`file_fields`):
    those take a NUL, and their parser reports it as the file's error with its line."""
    files: frozenset[str] = getattr(model, "file_fields", frozenset())
    for name, part in schema.get("properties", {}).items():
        if name not in files:
            forbid_nul_in_schema(part)


class Body(BaseModel):
    """The base of every JSON request body (a test checks that every route's is one)."""

    model_config = ConfigDict(json_schema_extra=_document_body)
    # Fields holding a whole file (a definition's markdown, a rubric's YAML): its parser
    # refuses a NUL itself, naming the line (INVALID_FILE), as for an uploaded file.
    file_fields: ClassVar[frozenset[str]] = frozenset()

    @field_validator("*")
    @classmethod
    def _no_nul(cls, value: Any, info: ValidationInfo) -> Any:
        if info.field_name not in cls.file_fields and has_nul(value):
            raise PydanticCustomError("string_nul", NUL_MESSAGE)
        return value


def _nul_error(where: str, name: str) -> dict[str, Any]:
    return {"loc": (where, name), "msg": NUL_MESSAGE, "type": "string_nul", "input": None}


def refuse_nul_parameters(connection: HTTPConnection) -> None:
    """The app's dependency: a path or query parameter holding a NUL is a 422 naming it
    (the routes' own parameter types need not each remember)."""
    errors = [
        _nul_error("path", name)
        for name, value in connection.path_params.items()
        if isinstance(value, str) and "\x00" in value
    ]
    errors += [
        _nul_error("query", name)
        for name, value in connection.query_params.multi_items()
        if "\x00" in name or "\x00" in value
    ]
    if not errors:
        return
    if connection.scope["type"] == "websocket":
        raise WebSocketRequestValidationError(errors)
    raise RequestValidationError(errors)


def document_parameters(app: FastAPI) -> None:
    """Make `app.openapi()` give every path and query parameter's string the NO_NUL pattern,
    as `refuse_nul_parameters` enforces."""
    build: Callable[[], dict[str, Any]] = app.openapi
    done: list[bool] = []

    def openapi() -> dict[str, Any]:
        schema = build()
        if not done:  # the schema is built once and cached: mark it once
            for item in schema.get("paths", {}).values():
                for operation in item.values():
                    if not isinstance(operation, dict):
                        continue
                    for parameter in operation.get("parameters", ()):
                        if parameter.get("in") in ("path", "query"):
                            forbid_nul_in_schema(parameter.get("schema", {}))
            done.append(True)
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
