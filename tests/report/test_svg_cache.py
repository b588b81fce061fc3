"""The analysis page's figures are rendered once per analysis (issue 20: 0.6–2.3 s of
matplotlib on every load): a bounded LRU keyed by what they are drawn from (and the database,
tests/report/test_figure_store.py); and a figure that cannot be drawn becomes a figure saying
so instead of costing the page."""

from __future__ import annotations

from typing import Any

from valuerank.report.svg import SvgCache, _figure


def test_the_cache_keeps_the_most_recently_used() -> None:
    cache = SvgCache(2)
    cache.put("a", {"f": "a"})
    cache.put("b", {"f": "b"})
    assert cache.get("a") == {"f": "a"}  # a is now the most recent: b goes first
    cache.put("c", {"f": "c"})
    assert cache.get("b") is None and cache.get("a") and cache.get("c") and len(cache) == 2


def test_a_figure_that_fails_says_so_in_the_figure() -> None:
    def broken(_: Any) -> Any:
        raise KeyError("perModel")

    fig = _figure("win_rates", broken, {})
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts == ["FIGURE_FAILED: this figure could not be drawn (see the server log)"]
    assert fig.axes[0].get_title() == "Value win rates per model with 95% intervals"
