"""Errors the services raise: each has a stable code (for the API and `--json`) and a hint."""

from __future__ import annotations


class ValueRankError(Exception):
    """Base of the errors a user can act on. `code` is UPPER_SNAKE and stable."""

    code = "VALUERANK_ERROR"
    http_status = 400

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint
        super().__init__(message if hint is None else f"{message} ({hint})")

    def to_dict(self) -> dict[str, str]:
        data = {"code": self.code, "error": self.message}
        if self.hint:
            data["hint"] = self.hint
        return data


class NotFoundError(ValueRankError):
    code = "NOT_FOUND"
    http_status = 404


class AmbiguousIdError(ValueRankError):
    code = "AMBIGUOUS_ID"
    http_status = 400


class ConflictError(ValueRankError):
    code = "CONFLICT"
    http_status = 409


class ImmutableVersionError(ValueRankError):
    code = "IMMUTABLE_VERSION"
    http_status = 409


class InvalidInputError(ValueRankError):
    code = "INVALID_INPUT"
    http_status = 422
