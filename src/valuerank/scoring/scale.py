"""A scale's numbered lines, mirrored and mapped back (pure; see
`valuerank.definitions.presentation`, which asks scenarios with their scale reversed).

Here, below the definitions and the providers, so that both the probe's reading of an answer
and the scripted personas (which must put a reversed prompt back to tell its order from its
content) share one definition of a scale line and of its mirror.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

__all__ = [
    "SCALE_ORDERS",
    "ScaleLine",
    "ScaleOrder",
    "map_decision",
    "mirrored_scale",
    "scale_lines",
]

ScaleOrder = Literal["as-written", "reversed"]
SCALE_ORDERS: tuple[ScaleOrder, ...] = get_args(ScaleOrder)

# A numbered scale line: optional bullet or emphasis, the number, a separator, its text
# (the same shapes `scoring.decision.scale_labels_from_template` reads).
_SCALE_LINE = re.compile(
    r"^(?P<head>[ \t]*(?:[-*+][ \t]+)?[*_`]*\(?)(?P<n>[0-9]+)"
    r"(?P<sep>\)?[*_`]*[ \t]*(?:-|–|—|:|=)[ \t]*)(?P<label>[^\n]*?[A-Za-z][^\n]*?)[ \t]*$",
    re.MULTILINE,
)


@dataclass(frozen=True)
class ScaleLine:
    """One numbered line of a scale: where its text sits in the body, its number and text."""

    number: int
    label: str
    start: int  # offset of the label in the body
    end: int


def scale_lines(body: str) -> list[ScaleLine]:
    """The body's numbered scale lines (first line of each number), in body order."""
    found: list[ScaleLine] = []
    seen: set[int] = set()
    for match in _SCALE_LINE.finditer(body):
        number = int(match.group("n"))
        if number in seen:
            continue
        seen.add(number)
        found.append(
            ScaleLine(number, match.group("label"), match.start("label"), match.end("label"))
        )
    return found


def _reversible(lines: Sequence[ScaleLine]) -> bool:
    numbers = sorted(line.number for line in lines)
    return len(numbers) >= 2 and numbers == list(range(numbers[0], numbers[-1] + 1))


def mirrored_scale(body: str) -> str | None:
    """The body with its scale's texts mirrored (the line numbered n shows the text written
    under ``low + high - n``), or None when it has no run of consecutive numbered lines."""
    lines = scale_lines(body)
    if not _reversible(lines):
        return None
    low = min(line.number for line in lines)
    high = max(line.number for line in lines)
    text = {line.number: line.label for line in lines}
    out: list[str] = []
    cursor = 0
    for line in sorted(lines, key=lambda item: item.start):
        out += [body[cursor : line.start], text[low + high - line.number]]
        cursor = line.end
    out.append(body[cursor:])
    return "".join(out)


def map_decision(code: int | None, low: int, high: int) -> int | None:
    """A decision given on a reversed scale, in the definition's direction (and back)."""
    return None if code is None else low + high - code
