"""The command being run, as the user typed it (`valuerank definitions list`), for messages
that name it. Typer runs a command's function outside Click's context stack, so the root
group notes the words here when it dispatches."""

from __future__ import annotations

from contextvars import ContextVar

_COMMAND: ContextVar[str] = ContextVar("valuerank_command", default="valuerank")


def note_command(words: list[str]) -> None:
    _COMMAND.set(" ".join(["valuerank", *words]))


def command_name() -> str:
    """The command running now (`valuerank` alone when none was noted)."""
    return _COMMAND.get()
