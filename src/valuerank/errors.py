"""Errors the services raise: each has a stable code (for the API and `--json`) and a hint."""

from __future__ import annotations

from typing import Any


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


# The optional extra that brings pandas and pyarrow (pyproject.toml).
DATA_EXTRA = "pip install 'valuerank[data]'"


class MissingDependencyError(ValueRankError):
    """An optional library (pandas, pyarrow: the `data` extra) is not installed."""

    code = "MISSING_DEPENDENCY"
    http_status = 501


def optional_module(name: str, what: str) -> Any:
    """The module `name` of an optional extra, imported now, or MISSING_DEPENDENCY naming
    the install command."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        raise MissingDependencyError(
            f"{what} needs {name.split('.')[0]}, which is not installed", hint=DATA_EXTRA
        ) from None
