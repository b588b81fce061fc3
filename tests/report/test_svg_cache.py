"""The analysis page's figures are rendered once per analysis (issue 20: 0.6–2.3 s of
matplotlib on every load): a bounded LRU keyed by what they are drawn from; and a figure that
cannot be drawn becomes a figure saying so instead of costing the page."""

from __future__ import annotations

from typing import Any

from valuerank.analysis.basic import analyze_basic
from valuerank.analysis.synthetic import SyntheticSpec, synthetic_run
from valuerank.report.svg import SvgCache, _figure, cached_analysis_svgs, svg_cache


def basic_result(seed: int) -> dict[str, Any]:
    return analyze_basic(synthetic_run(SyntheticSpec(models=2, scenarios=12, seed=seed)))


def test_a_run_is_rendered_once_per_key() -> None:
    basic = basic_result(1)
    key = ("org", "run-cache-test", "hash-1", "code", False)
    first, hit = cached_analysis_svgs(key, basic, None)
    assert not hit and set(first) == {
        "value_sensitivity",
        "win_rates",
        "agreement_heatmap",
        "dimension_effects",
    }
    again, hit = cached_analysis_svgs(key, basic, None)
    assert hit and again is first
    other = basic_result(2)  # new inputs: a new hash, drawn anew
    changed, hit = cached_analysis_svgs((*key[:2], "hash-2", *key[3:]), other, None)
    assert not hit and changed["agreement_heatmap"] != first["agreement_heatmap"]
    assert svg_cache.get(key) is first


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
