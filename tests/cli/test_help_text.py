"""Help reads well at 80 columns: a paragraph of a command's help is wrapped once, by the
terminal's width, not also at the docstring's line breaks; list items keep their lines."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys

from valuerank.cli.help_text import reflow


def test_a_paragraph_is_joined_and_lists_and_blocks_keep_their_lines() -> None:
    text = """First line
    goes on here.

    A paragraph wrapped
    at the source's width.

    Steps:
    - one thing
      and its tail
    - another
    1. numbered

        indented code
        stays
    """
    assert reflow(text) == (
        "First line goes on here.\n\n"
        "A paragraph wrapped at the source's width.\n\n"
        "Steps:\n- one thing and its tail\n- another\n1. numbered\n\n"
        "    indented code\n    stays"
    )
    assert reflow("\bkept\nas written") == "\bkept\nas written"


def _help(*command: str) -> list[str]:
    env = {**os.environ, "COLUMNS": "80", "TERM": "dumb", "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "valuerank", *command, "--help"],
        capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    return done.stdout.splitlines()


def test_a_command_description_fills_the_80_column_terminal() -> None:
    lines = _help("runs", "judge")
    description = lines[: next(i for i, line in enumerate(lines) if line.startswith("╭"))]
    text = [line.strip() for line in description]
    # Within a paragraph, a line is only short when the next word would not fit on it.
    for line, following in itertools.pairwise(text):
        if line and following and not line.startswith("Usage"):
            assert len(line) + 1 + len(following.split()[0]) > 78, (line, following)
    assert any("transcripts it has not read" in line for line in text), text
