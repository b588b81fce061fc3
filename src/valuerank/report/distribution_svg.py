"""Decision distributions as one stacked bar per model, drawn as SVG text (pure, fast: no
matplotlib for a few rectangles). Every text is escaped."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

# A diverging palette over the scale (low codes red, high codes blue), readable in grey print.
PALETTE = ("#b2182b", "#ef8a62", "#d9d9d9", "#67a9cf", "#2166ac")
ROW_H, BAR_H, LABEL_W, BAR_W, LEGEND_H = 26, 16, 210, 460, 18


def _colour(k: int, total: int) -> str:
    if total <= 1:
        return PALETTE[2]
    return PALETTE[round(k * (len(PALETTE) - 1) / (total - 1))]


def _short(text: str, limit: int = 30) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def distribution_svg(rows: Sequence[dict[str, Any]], scale: Sequence[tuple[str, str]]) -> str:
    """One bar per model (share of its decided transcripts per code) and a legend of the
    codes with their labels; `rows` as `sections.decision_rows` gives them."""
    width = LABEL_W + BAR_W + 60
    # The legend first (codes with their labels, wrapped to the width), the bars under it.
    legend: list[tuple[float, float, int, str]] = []
    x, y = 8.0, 6.0
    for k, (code, label) in enumerate(scale):
        text = f"{code} {_short(label, 26)}" if label else code
        step = 24 + 6.2 * len(text)
        if x + step > width and x > 8:
            x, y = 8.0, y + LEGEND_H
        legend.append((x, y, k, text))
        x += step
    top = y + LEGEND_H + 8
    height = int(top + ROW_H * max(len(rows), 1) + 4)
    title = "Decision distribution per model: share of decided transcripts per code"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart distribution" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
    ]
    for lx, ly, k, text in legend:
        parts.append(
            f'<rect x="{lx:.0f}" y="{ly:.0f}" width="12" height="12" '
            f'fill="{_colour(k, len(scale))}"/>'
            f'<text x="{lx + 16:.0f}" y="{ly + 10:.0f}" font-size="11">{escape(text)}</text>'
        )
    for i, row in enumerate(rows):
        y = int(top + i * ROW_H)
        decided = sum(count for _, count in row["counts"])
        parts.append(
            f'<text x="{LABEL_W - 8}" y="{y + 12}" font-size="12" text-anchor="end">'
            f"{escape(_short(str(row['model'])))}</text>"
        )
        if not decided:
            parts.append(
                f'<text x="{LABEL_W}" y="{y + 12}" font-size="11" fill="#555">'
                "no decided transcripts</text>"
            )
            continue
        x0 = float(LABEL_W)
        for k, (code, count) in enumerate(row["counts"]):
            if not count:
                continue
            w = BAR_W * count / decided
            parts.append(
                f'<rect x="{x0:.1f}" y="{y}" width="{w:.1f}" height="{BAR_H}" '
                f'fill="{_colour(k, len(row["counts"]))}" stroke="#fff" stroke-width="0.5">'
                f"<title>{escape(str(row['model']))}: code {escape(code)}, {count} of "
                f"{decided} ({count / decided:.0%})</title></rect>"
            )
            x0 += w
        parts.append(
            f'<text x="{LABEL_W + BAR_W + 6}" y="{y + 12}" font-size="11">n={decided}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)
