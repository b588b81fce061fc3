"""No input crashes a parser: it returns a model or raises FormatError, nothing else."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.conftest import examples

from valuerank.formats import (
    FormatError,
    check_file,
    parse_definition,
    parse_rubric,
    parse_run_manifest,
    parse_scenarios,
    parse_transcript,
)

from .helpers import CLI_FIXTURES, RUN_DIR, read

PARSERS: dict[str, tuple[Callable[[str], Any], str]] = {
    "definition": (parse_definition, "definitions/exp-Demo_Lifeboat_Rules.md"),
    "scenarios": (parse_scenarios, "scenarios/scenarios.legacy.yaml"),
    "transcript": (
        parse_transcript,
        str(next(RUN_DIR.glob("transcript.*haiku*.md")).relative_to(CLI_FIXTURES)),
    ),
    "run_manifest": (parse_run_manifest, "runs/2025-03-02.14-05/run_manifest.yaml"),
    "rubric": (parse_rubric, "config/values_rubric.yaml"),
}


def _survives(parser: Callable[[str], Any], text: str) -> None:
    with contextlib.suppress(FormatError):
        parser(text)


@st.composite
def mutations(draw: st.DrawFn, text: str) -> str:
    """A valid file with a few lines deleted, duplicated, re-indented or garbled."""
    lines = text.split("\n")
    for _ in range(draw(st.integers(1, 4))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        action = draw(st.sampled_from(["delete", "duplicate", "indent", "dedent", "garble"]))
        if action == "delete":
            del lines[i]
        elif action == "duplicate":
            lines.insert(i, lines[i])
        elif action == "indent":
            lines[i] = "  " + lines[i]
        elif action == "dedent":
            lines[i] = lines[i].lstrip()
        else:
            lines[i] = draw(
                st.sampled_from(
                    [
                        "---",
                        "|",
                        "- x",
                        "x:",
                        "[",
                        "# Template",
                        "## Dimensions",
                        "#### Turn 1 (x)",
                        ": :",
                        "values:",
                        "scenarios:",
                        "| Score |",
                        "**Target:**",
                        "null",
                    ]
                )
            )
    return "\n".join(lines)


@pytest.mark.parametrize("kind", sorted(PARSERS))
@settings(deadline=None, max_examples=examples(150), suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_files_never_crash(kind: str, data: st.DataObject) -> None:
    parser, relative = PARSERS[kind]
    text = data.draw(mutations(read(CLI_FIXTURES / relative)))
    _survives(parser, text)
    check_file("file", text)


@pytest.mark.parametrize("kind", sorted(PARSERS))
@settings(deadline=None, max_examples=examples(100))
@given(text=st.text(max_size=200) | st.sampled_from(["", "---\n---\n", "null", "[]", "- 1"]))
def test_random_text_never_crashes(kind: str, text: str) -> None:
    _survives(PARSERS[kind][0], text)
    check_file(f"x.{kind}", text)
