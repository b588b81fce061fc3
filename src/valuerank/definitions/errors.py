"""Errors raised by the definition logic (matching rules, expansion)."""

from __future__ import annotations


class DefinitionError(ValueError):
    """A definition cannot be used as written.

    Carries the 1-based `line` (and `column`) of the problem when known — for matching
    rules the line is counted inside the `# Matching Rules` section unless the caller
    passed the section's first line — and a `hint` that tells the user how to fix it.
    """

    def __init__(
        self,
        message: str,
        *,
        line: int | None = None,
        column: int | None = None,
        hint: str | None = None,
        source: str | None = None,
    ) -> None:
        self.source = source
        self.message = message
        self.line = line
        self.column = column
        self.hint = hint
        super().__init__(self.render())

    def render(self) -> str:
        if self.source:
            # The compiler-style `file:line:column:` that editors and terminals link to.
            where = self.source
            if self.line is not None:
                where += f":{self.line}"
                if self.column is not None:
                    where += f":{self.column}"
            where += ": "
        elif self.line is not None:
            where = f"line {self.line}"
            if self.column is not None:
                where += f", column {self.column}"
            where += ": "
        else:
            where = ""
        text = f"{where}{self.message}"
        if self.hint:
            text += f" (fix: {self.hint})"
        return text
