"""Progress bars as the pages draw them: one segment per outcome (completed, failed,
cancelled) on a track of every job, and a percentage of completed work only.

The server's first paint (templates/_progress.html) and the live updates (static/api.js
`progressBar`) draw the same bar from the same counts: keep the two in step. The bar is an
SVG whose user units are jobs (viewBox width = total), so each segment's width is exactly its
count — no rounding — and the Content-Security-Policy (no inline styles) is respected.
"""

from __future__ import annotations

from dataclasses import dataclass

from valuerank.runs.progress import Progress

OUTCOMES = ("completed", "failed", "cancelled")


@dataclass(frozen=True)
class Segment:
    outcome: str
    x: int  # jobs before this segment
    count: int


def segments(p: Progress) -> list[Segment]:
    """The bar's segments, left to right, with their offsets (all three, even when empty, so
    the live page only updates attributes)."""
    found: list[Segment] = []
    x = 0
    for outcome in OUTCOMES:
        count = getattr(p, outcome)
        found.append(Segment(outcome, x, count))
        x += count
    return found


def value_text(p: Progress) -> str:
    """What a screen reader says of the bar (api.js `progressText` writes the same)."""
    return (
        f"{p.completed_percent} % completed: {p.completed} of {p.total} jobs; "
        f"{p.failed} failed, {p.cancelled} cancelled"
    )
