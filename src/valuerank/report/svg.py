"""The analysis package's matplotlib figures as inline-safe SVG, for the analysis page and
the shareable report alike.

Every text is escaped (matplotlib escapes what it writes); ids are prefixed so several figures
can share one page; styles become presentation attributes (the pages' Content-Security-Policy
allows no inline styles).

Rendering a run's figures takes 0.3–2 s of matplotlib, so `svg_cache` keeps the SVGs of the
last `SVG_CACHE_SIZE` analyses in memory, keyed by `figure_key` (the run, its inputs' hash,
the analysis code version, whether a deep analysis is drawn), and report/figures.py keeps
them in the database too: a cached analysis's page or report renders nothing. matplotlib is
imported only to draw. A figure that fails to draw becomes a figure saying so (the
page still answers) and is logged.
"""

from __future__ import annotations

import functools
import hashlib
import io
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from valuerank.analysis import CODE_VERSION

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_PROLOG = re.compile(r"^.*?(?=<svg)", re.DOTALL)
_SIZE = re.compile(r'(<svg[^>]*?)\s(width|height)="[^"]*"')
_ID_REFS = re.compile(r'(id="|url\(#|href="#)')
_STYLE_ELEMENT = re.compile(r"<style[^>]*>.*?</style>|<metadata>.*?</metadata>", re.DOTALL)
_STYLE_ATTR = re.compile(r'\sstyle="([^"]*)"')
_FONT = re.compile(r"^([\d.]+px)\s+(.+)$")

log = logging.getLogger(__name__)
SVG_CACHE_SIZE = 64  # analyses; a run's figures are 50–400 kB of SVG


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
    from matplotlib import rc_context  # only to draw: a stored figure needs no matplotlib

    buffer = io.StringIO()
    # tight_layout() has already placed everything; a layout engine left on the figure
    # would make savefig draw it once more just to lay it out (a third of the time).
    fig.set_layout_engine(None)
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


def figure_key(org_id: str, run_id: str, input_hash: str, deep: bool) -> Hashable:
    """What a run's figures are drawn from: its inputs under this code, with or without the
    deep analysis (a fresh deep result is a function of the same inputs)."""
    return (org_id, run_id, input_hash, CODE_VERSION, deep)


_LABELS = {
    "value_sensitivity": "Value sensitivity: decision points per score unit, 95% intervals",
    "win_rates": "Value win rates per model with 95% intervals",
    "agreement_heatmap": "Model agreement heat map (Spearman rho)",
    "dimension_effects": "Dimension effects (eta squared)",
    "pca_scatter": "Models on the first two principal components",
}


Drawer = Callable[[Mapping[str, Any]], "Figure"]


def _figure(name: str, draw: Drawer, data: Mapping[str, Any]) -> Figure:
    """`draw(data)`, or a figure saying it could not be drawn: one figure never costs the
    page (the plots handle every shape of result the tests generate; this is the backstop)."""
    try:
        return draw(data)
    except Exception:  # any drawing error: the page must still answer
        from valuerank.analysis.plots import empty_figure

        log.exception("FIGURE_FAILED: the %s figure could not be drawn", name)
        return empty_figure(
            _LABELS[name], "FIGURE_FAILED: this figure could not be drawn (see the server log)"
        )


def _drawn(drawers: Mapping[str, Drawer], data: Mapping[str, Any]) -> dict[str, str]:
    return {
        name: figure_svg(_figure(name, draw, data), name.replace("_", "-"), _LABELS[name])
        for name, draw in drawers.items()
    }


def basic_svgs(basic: Mapping[str, Any]) -> dict[str, str]:
    """The figures drawn from a basic analysis, as inline SVG by name (blocking: matplotlib)."""
    from valuerank.analysis.plots import (
        agreement_heatmap,
        dimension_effects,
        value_sensitivity,
        win_rates,
    )

    drawers = {
        "value_sensitivity": value_sensitivity,
        "win_rates": win_rates,
        "agreement_heatmap": agreement_heatmap,
        "dimension_effects": dimension_effects,
    }
    return _drawn(drawers, basic)


def deep_svgs(deep: Mapping[str, Any]) -> dict[str, str]:
    """The figures drawn from a deep analysis (blocking: matplotlib)."""
    from valuerank.analysis.plots import pca_scatter

    return _drawn({"pca_scatter": pca_scatter}, deep)


def analysis_svgs(basic: Mapping[str, Any], deep: Mapping[str, Any] | None) -> dict[str, str]:
    """The analysis package's figures of a run as inline SVG, by name (blocking: matplotlib)."""
    return {**basic_svgs(basic), **(deep_svgs(deep) if deep is not None else {})}


@functools.cache
def figures_version() -> str:
    """What drew the figures: a hash of the drawing code (the plots and this module), so a
    stored figure drawn by other code is drawn again, without a number to remember to bump."""
    here = Path(__file__)
    sources = (here.parents[1] / "analysis" / "plots.py", here)
    digest = hashlib.sha256()
    for source in sources:
        digest.update(source.read_bytes())
    return digest.hexdigest()[:32]


class SvgCache:
    """A bounded LRU of rendered figure sets, safe across the threads rendering runs in."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[Hashable, dict[str, str]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> dict[str, str] | None:
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, key: Hashable, svgs: dict[str, str]) -> None:
        with self._lock:
            self._entries[key] = svgs
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


svg_cache = SvgCache(SVG_CACHE_SIZE)


def forest_svg(result: Mapping[str, Any]) -> str:
    """The forest plot of a comparison's decision deltas (blocking: matplotlib)."""
    from valuerank.analysis.plots import comparison_forest

    label = "Decision delta per model with 95% intervals; red: significant"
    return figure_svg(comparison_forest(result), "forest", label)
