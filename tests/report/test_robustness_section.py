"""The report's robustness section: the order effect, consistency and each value's rank
interval of the analysis JSON, on a run asked in both orders; a run asked one way says why
it has no order effect."""

from __future__ import annotations

from tests.report.test_render import Page, _doc

from valuerank.analysis import analyze_basic
from valuerank.analysis.synthetic import RecoverySpec, recovery_run
from valuerank.analysis.synthetic_presentation import PresentationSpec, presentation_run
from valuerank.report import render_report


def test_the_section_holds_the_order_effect_consistency_and_rank_intervals() -> None:
    basic = analyze_basic(
        presentation_run(PresentationSpec(scenarios=30, samples=2, position_bias=0.5, seed=2))
    )
    html = render_report(_doc(basic))
    page = Page(html)
    entry = basic["robustness"]["model-0"]
    order = entry["orderEffect"]
    assert page.cells[("model-0", "None", "orderEffect")][1] == f"{order['value']:.2f}"
    low, high = order["ci95"]
    assert page.cells[("model-0", "None", "orderEffectCi")][1] == f"{low:.2f} – {high:.2f}"
    agreed = entry["consistency"]
    assert page.cells[("model-0", "None", "consistency")][1] == f"{agreed['value']:.2f}"
    assert page.cells[("model-0", "None", "phrasingEffectReason")][1] == (
        "only one phrasing was asked"
    )
    for v in entry["ranking"]["sensitivity"]["values"]:
        attrs, text = page.cells[("model-0", f"sensitivity:{v['value']}", "rankCi")]
        assert text == f"{v['ci95'][0]} – {v['ci95'][1]}"
        assert attrs["data-lower"] == str(v["ci95"][0])
    assert "orderEffect: paired_t_over_scenarios" in html  # the methods list, one per part


def test_a_run_asked_one_way_says_why_it_has_no_order_effect() -> None:
    basic = analyze_basic(recovery_run(RecoverySpec(scenarios=12)))
    page = Page(render_report(_doc(basic)))
    assert page.cells[("model-0", "None", "orderEffectReason")][1] == (
        "only one scale order was asked"
    )
