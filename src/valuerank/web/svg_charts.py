"""SVG for the research pages: the analysis package's matplotlib figures made inline-safe, and
the definition version tree drawn here (forks as branches, runs hanging under their version).

Every text is escaped (matplotlib escapes what it writes; the tree escapes its own labels);
ids are prefixed so several figures can share one page.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from matplotlib import rc_context
from matplotlib.figure import Figure

from valuerank.analysis.plots import analysis_figures, comparison_forest
from valuerank.versioning import TreeNode

_PROLOG = re.compile(r"^.*?(?=<svg)", re.DOTALL)
_SIZE = re.compile(r'(<svg[^>]*?)\s(width|height)="[^"]*"')
_ID_REFS = re.compile(r'(id="|url\(#|href="#)')
_STYLE_ELEMENT = re.compile(r"<style[^>]*>.*?</style>|<metadata>.*?</metadata>", re.DOTALL)
_STYLE_ATTR = re.compile(r'\sstyle="([^"]*)"')
_FONT = re.compile(r"^([\d.]+px)\s+(.+)$")


def _attributes(match: re.Match[str]) -> str:
    """`style="fill: #fff; font: 10px 'DejaVu Sans'"` as presentation attributes: the
    pages' Content-Security-Policy allows no inline styles."""
    attrs = []
    for declaration in match.group(1).split(";"):
        name, _, value = declaration.partition(":")
        name, value = name.strip(), value.strip()
        if not name or not value:
            continue
        font = _FONT.match(value) if name == "font" else None
        if font:
            attrs += [("font-size", font.group(1)), ("font-family", font.group(2))]
        elif name != "font":
            attrs.append((name, value))
    return "".join(f' {name}="{value}"' for name, value in attrs)


def figure_svg(fig: Figure, prefix: str, label: str) -> str:
    """`fig` as an inline `<svg>` (text kept as text, ids prefixed, scales with its box)."""
    buffer = io.StringIO()
    with rc_context({"svg.fonttype": "none", "svg.hashsalt": prefix}):
        fig.savefig(buffer, format="svg")
    svg = _PROLOG.sub("", buffer.getvalue(), count=1)
    while _SIZE.search(svg[: svg.index(">") + 1]):  # let CSS size it (viewBox kept)
        svg = _SIZE.sub(r"\1", svg, count=1)
    svg = _ID_REFS.sub(lambda m: f"{m.group(1)}{prefix}-", svg)
    svg = _STYLE_ATTR.sub(_attributes, _STYLE_ELEMENT.sub("", svg))
    return svg.replace(
        "<svg ", f'<svg class="chart figure" role="img" aria-label="{escape(label)}" ', 1
    )


@dataclass(frozen=True)
class TreeRun:
    """A run drawn under the version it used."""

    id: str
    status: str


def _n(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _short(text: str, limit: int = 18) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def version_tree_svg(
    root: TreeNode,
    runs: Mapping[str, Sequence[TreeRun]],
    *,
    current: str | None = None,
    link: str = "/definitions/{id}",
) -> str:
    """The version tree left to right: one column per depth, one row per leaf, an edge from
    each parent to each child (a fork shows as a branch), the runs of a version listed under
    it. Each version links to its page; `current` is highlighted."""
    col_w, row_h, node_w, node_h, run_h = 170, 40, 130, 26, 15
    placed: list[tuple[TreeNode, float, float]] = []
    edges: list[tuple[float, float, float, float]] = []
    next_y = [24.0]

    def place(node: TreeNode, depth: int) -> float:
        x = 16.0 + depth * col_w
        child_ys = [place(child, depth + 1) for child in node.children]
        if child_ys:
            y = (child_ys[0] + child_ys[-1]) / 2
        else:
            y = next_y[0]
            next_y[0] += row_h + run_h * len(runs.get(node.version.id, ()))
        for cy in child_ys:
            edges.append((x + node_w, y + node_h / 2, x + col_w, cy + node_h / 2))
        placed.append((node, x, y))
        return y

    place(root, 0)
    width = int(max(x for _, x, _ in placed) + node_w + 40)
    height = int(
        max(y + node_h + run_h * len(runs.get(n.version.id, ())) for n, _, y in placed) + 16
    )
    title = f"Version tree of {root.version.name}"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart tree" viewBox="0 0 {width} '
        f'{height}" width="{width}" height="{height}" role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
    ]
    for x1, y1, x2, y2 in edges:
        mid = _n((x1 + x2) / 2)
        parts.append(
            f'<path class="edge" d="M{_n(x1)},{_n(y1)} C{mid},{_n(y1)} {mid},{_n(y2)} '
            f'{_n(x2)},{_n(y2)}" fill="none" stroke="#8a94a6" stroke-width="1.5"/>'
        )
    for node, x, y in sorted(placed, key=lambda p: (p[1], p[2])):
        v = node.version
        css = "node current" if v.id == current else "node"
        href = escape(link.format(id=v.id))
        parts.append(
            f'<a href="{href}" class="{css}" data-version-id="{escape(v.id)}">'
            f"<title>{escape(v.name)} {escape(v.version_label)} ({escape(v.id)})</title>"
            f'<rect x="{_n(x)}" y="{_n(y)}" width="{node_w}" height="{node_h}" rx="5" '
            f'fill="{"#dbe7f7" if v.id == current else "#fff"}" stroke="#4a78b5"/>'
            f'<text x="{_n(x + 8)}" y="{_n(y + 17)}" font-size="12">'
            f"{escape(_short(v.version_label, 8))} · {escape(_short(v.id, 8))}</text></a>"
        )
        for i, run in enumerate(runs.get(v.id, ())):
            ry = y + node_h + 11 + i * run_h
            parts.append(
                f'<a href="/runs/{escape(run.id)}" class="run-link">'
                f'<circle cx="{_n(x + 8)}" cy="{_n(ry - 4)}" r="3.5" class="run-dot status-'
                f'{escape(run.status)}" fill="#5a9a5a"/>'
                f'<text x="{_n(x + 16)}" y="{_n(ry)}" font-size="11">run '
                f"…{escape(run.id[-8:])} ({escape(run.status)})</text></a>"
            )
    parts.append("</svg>")
    return "".join(parts)


def analysis_svgs(basic: Mapping[str, Any], deep: Mapping[str, Any] | None) -> dict[str, str]:
    """The analysis package's figures of a run as inline SVG, by name (blocking: matplotlib)."""
    figures = analysis_figures(basic, deep)
    labels = {
        "value_sensitivity": "Value sensitivity: decision points per level, 95% intervals",
        "win_rates": "Value win rates per model with 95% intervals",
        "agreement_heatmap": "Model agreement heat map (Spearman rho)",
        "dimension_effects": "Dimension effects (eta squared)",
        "pca_scatter": "Models on the first two principal components",
    }
    return {
        name: figure_svg(fig, name.replace("_", "-"), labels[name]) for name, fig in figures.items()
    }


def forest_svg(result: Mapping[str, Any]) -> str:
    """The forest plot of a comparison's decision deltas (blocking: matplotlib)."""
    label = "Decision delta per model with 95% intervals; red: significant"
    return figure_svg(comparison_forest(result), "forest", label)
