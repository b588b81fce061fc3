"""Checking a definition file without storing it: what the editor shows while one types."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from valuerank.definitions.errors import DefinitionError
from valuerank.definitions.service import parse_and_check
from valuerank.formats.errors import FormatError


@dataclass(frozen=True)
class CheckResult:
    """Whether the file would be accepted; if not, the parser's message, line and fix."""

    valid: bool
    name: str | None = None
    dimensions: tuple[str, ...] = ()
    message: str | None = None
    line: int | None = None
    column: int | None = None
    hint: str | None = None

    def to_dict(self) -> dict[str, Any]:
        error = None
        if not self.valid:
            error = {
                "message": self.message,
                "line": self.line,
                "column": self.column,
                "hint": self.hint,
            }
        return {
            "valid": self.valid,
            "name": self.name,
            "dimensions": list(self.dimensions),
            "error": error,
        }


def check_definition(text: str, source: str | None = None) -> CheckResult:
    """Parse and check `text` as `POST /api/definitions` would, reporting instead of raising."""
    try:
        definition = parse_and_check(text, source)
    except FormatError as exc:
        return CheckResult(False, message=exc.message, line=exc.line, hint=exc.hint)
    except DefinitionError as exc:
        return CheckResult(
            False, message=exc.message, line=exc.line, column=exc.column, hint=exc.hint
        )
    return CheckResult(True, definition.name, tuple(d.name for d in definition.dimensions))
