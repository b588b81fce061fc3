"""The definition version tree as SVG (forks as branches, runs hanging under their version).

Every label is escaped here. The analysis figures' SVG is `valuerank.report.svg`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

from valuerank.refs import short_id
from valuerank.versioning import TreeNode


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
        # A group, not an image: it holds links, which an image's children cannot be.
        f'{height}" width="{width}" height="{height}" role="group" aria-label="{escape(title)}">',
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
                f"{escape(short_id(run.id))} ({escape(run.status)})</text></a>"
            )
    parts.append("</svg>")
    return "".join(parts)
