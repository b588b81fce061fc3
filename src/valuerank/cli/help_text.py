"""Commands' help, reflowed for the terminal it is read in.

The docstrings are wrapped at the source's width; Typer's rich help keeps their single line
breaks and wraps again at the terminal's, so an 80-column terminal showed every long line
broken twice. A paragraph's lines are joined here (Rich wraps them once); list items, indented
blocks and Click's `\\b` (no-rewrap) paragraphs keep their lines.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

# A line that starts a new line even inside a paragraph: a list item.
_ITEM = re.compile(r"^(?:[-*•]\s|\d+[.)]\s)")


def _reflow_paragraph(paragraph: str) -> str:
    if paragraph.startswith("\b"):
        return paragraph
    lines: list[str] = []
    for line in paragraph.split("\n"):
        stripped = line.strip()
        # An indented block's lines stay apart, and so does the line after one.
        indented = line.startswith("    ") or (bool(lines) and lines[-1].startswith("    "))
        if not lines or _ITEM.match(stripped) or indented:
            lines.append(line.rstrip())
        else:
            lines[-1] = f"{lines[-1]} {stripped}"
    return "\n".join(lines)


def reflow(text: str) -> str:
    """`text` with each paragraph's lines joined, paragraphs (blank lines) kept."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(_reflow_paragraph(paragraph) for paragraph in paragraphs)


def reflow_command(command: Any) -> Any:
    """`command` (a Click command or group, with its subcommands) with reflowed help."""
    if command.help:
        command.help = reflow(command.help)
    for sub in getattr(command, "commands", {}).values():
        reflow_command(sub)
    return command
