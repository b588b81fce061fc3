"""Errors raised by the CLI file-format parsers."""

from __future__ import annotations

from dataclasses import dataclass


class FormatError(ValueError):
    """A CLI file could not be parsed.

    Carries the file name (when known), the 1-based line of the problem (when known)
    and a hint that tells the user how to fix it.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        line: int | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.source = source
        self.line = line
        self.hint = hint
        super().__init__(self.render())

    def render(self) -> str:
        where = self.source or "<input>"
        if self.line is not None:
            where = f"{where}:{self.line}"
        text = f"{where}: {self.message}"
        if self.hint:
            text += f" (fix: {self.hint})"
        return text

    def with_source(self, source: str) -> FormatError:
        """The same error, naming the file it came from."""
        return FormatError(self.message, source=source, line=self.line, hint=self.hint)


@dataclass(frozen=True)
class FormatWarning:
    """A tolerated quirk in an input file: parsing went on, but the user should know."""

    message: str
    line: int | None = None

    def render(self, source: str | None = None) -> str:
        where = source or "<input>"
        if self.line is not None:
            where = f"{where}:{self.line}"
        return f"{where}: warning: {self.message}"


class ParseContext:
    """What a parser of one file carries: the file's name and where warnings go."""

    def __init__(self, source: str | None, warnings: list[FormatWarning] | None) -> None:
        self.source = source
        self.warnings = warnings

    def error(self, message: str, line: int | None, hint: str) -> FormatError:
        return FormatError(message, source=self.source, line=line, hint=hint)

    def warn(self, message: str, line: int | None) -> None:
        if self.warnings is not None:
            self.warnings.append(FormatWarning(message, line))
