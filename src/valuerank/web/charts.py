"""SVG charts rendered on the server: pure functions from results to markup, every text
escaped, no script. Styled by classes from static/app.css (colours fall back to attributes)."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from valuerank.runs.results import ModelResult

SCALE = (1, 2, 3, 4, 5)
LABEL_CHARS = 32


def _n(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _label(result: ModelResult) -> str:
    """The model's name, shortened so that the whole label (with its synthetic mark) keeps
    to LABEL_CHARS and fits left of the bars."""
    suffix = " (synthetic)" if result.synthetic else ""
    room = LABEL_CHARS - len(suffix)
    name = result.model if len(result.model) <= room else result.model[: room - 1] + "…"
    return name + suffix


def mean_decision_chart(
    results: Sequence[ModelResult], *, width: int = 640, row_height: int = 30
) -> str:
    """A horizontal bar per model: its mean decision on the 1–5 scale, bars starting at 1.

    Models without a decision get "no decision" instead of a bar. Empty results: "".
    """
    if not results:
        return ""
    label_width = 250
    x0, x1 = float(label_width + 10), float(width - 50)
    top, bottom = 28, 12
    height = top + row_height * len(results) + bottom

    def x(value: float) -> float:
        return x0 + (min(max(value, 1.0), 5.0) - 1.0) / 4.0 * (x1 - x0)

    title = "Mean decision (1–5) per model"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
    ]
    for tick in SCALE:
        tx = _n(x(tick))
        parts.append(
            f'<line class="grid" x1="{tx}" y1="{top - 6}" x2="{tx}" y2="{height - bottom}" '
            'stroke="#ccc" stroke-width="1"/>'
            f'<text class="tick" x="{tx}" y="{top - 10}" text-anchor="middle" '
            f'font-size="12">{tick}</text>'
        )
    for i, r in enumerate(results):
        y = top + i * row_height
        mid = _n(y + row_height / 2 + 4)
        label = escape(_label(r))
        parts.append(
            f'<g class="row"><title>{escape(r.model)}</title>'
            f'<text class="label" x="{_n(x0 - 8)}" y="{mid}" text-anchor="end" '
            f'font-size="13">{label}</text>'
        )
        if r.mean_decision is None:
            parts.append(
                f'<text class="none" x="{_n(x0 + 4)}" y="{mid}" font-size="12" '
                'fill="#777">no decision</text></g>'
            )
            continue
        bar = max(x(r.mean_decision) - x0, 2.0)
        css = "bar synthetic" if r.synthetic else "bar"
        parts.append(
            f'<rect class="{css}" x="{_n(x0)}" y="{_n(y + 5)}" width="{_n(bar)}" '
            f'height="{_n(row_height - 10)}" fill="#4a78b5"/>'
            f'<text class="value" x="{_n(x0 + bar + 6)}" y="{mid}" font-size="12">'
            f"{r.mean_decision:.2f}</text></g>"
        )
    parts.append("</svg>")
    return "".join(parts)
