"""Every figure draws every shape of result (issue 20: win rates of exactly 0 and 1 answered
500): generated analysis JSON with missing keys, nulls, NaN, one or no models, interval ends
a rounding error on the wrong side of the point or unbounded (null) — each figure renders
to SVG. And what they draw for 0 / 1 win rates and open intervals, read back from the
artists."""

from __future__ import annotations

import io
import math
from typing import Any
from xml.etree import ElementTree

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure
from matplotlib.text import Annotation

from valuerank.analysis.basic import analyze_basic
from valuerank.analysis.plots import (
    OPEN_END_GID,
    analysis_figures,
    comparison_forest,
    value_sensitivity,
    win_rates,
)

from .helpers import run_of, strict_json

TEXT = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=5)  # DejaVu's glyphs
MODELS = st.sampled_from(["m:a", "m:b", "m:c"])
NAMES = st.sampled_from(["Honesty", "Harm_Prevention", "Loyalty"])
NUMBERS = st.one_of(
    st.none(),
    st.sampled_from([0.0, 1.0, 5.551115123125783e-17, 0.9999999999999999, math.nan, -0.0]),
    st.floats(-1.5, 1.5, allow_nan=False),
    st.integers(-2, 2),
    TEXT,  # a wrong type where a number belongs
)
INTERVALS = st.one_of(
    st.none(),
    st.fixed_dictionaries({}, optional={"lower": NUMBERS, "upper": NUMBERS}),
    st.lists(NUMBERS, min_size=2, max_size=2),
    st.lists(NUMBERS, max_size=3),
)


def optional(**fields: Any) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional=fields)


BASIC = optional(
    perModel=st.dictionaries(
        MODELS,
        optional(
            values=st.dictionaries(NAMES, optional(winRate=NUMBERS, confidenceInterval=INTERVALS))
        ),
        max_size=3,
    ),
    valueSensitivity=st.dictionaries(
        MODELS,
        st.dictionaries(
            st.sampled_from(["Stakes", "Risk"]),
            optional(coefficient=NUMBERS, ci95=INTERVALS, value=st.one_of(st.none(), NAMES)),
        ),
        max_size=3,
    ),
    modelAgreement=optional(
        pairwise=st.dictionaries(
            TEXT,
            optional(
                model1=MODELS, model2=st.one_of(MODELS, st.just("m:gone")), spearmanRho=NUMBERS
            ),
        )
    ),
    dimensionAnalysis=optional(
        dimensions=st.dictionaries(NAMES, optional(effectSize=NUMBERS)),
        byModel=st.dictionaries(
            MODELS, optional(dimensions=st.dictionaries(NAMES, optional(effectSize=NUMBERS)))
        ),
    ),
    scaleLabels=st.dictionaries(st.sampled_from(["1", "5", "x"]), TEXT),
)
DEEP = optional(
    pca=optional(
        available=st.booleans(),
        reason=st.one_of(st.none(), TEXT),
        coordinates=st.dictionaries(MODELS, st.one_of(st.none(), st.lists(NUMBERS, max_size=3))),
        explainedVarianceRatio=st.one_of(st.none(), st.lists(NUMBERS, max_size=3)),
    )
)
COMPARISON = optional(
    perModel=st.dictionaries(
        MODELS,
        optional(
            delta=NUMBERS,
            interval=INTERVALS,
            wilcoxon=st.one_of(st.none(), optional(significant=st.booleans())),
        ),
    )
)


def rendered(fig: Figure) -> ElementTree.Element:
    """The figure drawn to SVG (drawing is where matplotlib checks what it was given)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg")
    return ElementTree.fromstring(buffer.getvalue())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(basic=BASIC, deep=st.one_of(st.none(), DEEP), comparison=COMPARISON)
def test_every_figure_draws_every_shape_of_result(
    basic: dict[str, Any], deep: dict[str, Any] | None, comparison: dict[str, Any]
) -> None:
    figures = {**analysis_figures(basic, deep), "comparison_forest": comparison_forest(comparison)}
    assert len(figures) == (6 if deep is not None else 5)
    for fig in figures.values():
        assert rendered(fig).tag.endswith("svg")


def judged(rows: int) -> dict[str, Any]:
    """One model that always prioritised Honesty over Harm_Prevention: win rates 1 and 0."""
    data = run_of(
        [("m:a", f"s{i}", 3) for i in range(rows)],
        values=[(["Honesty"], ["Harm_Prevention"])] * rows,
    )
    result: dict[str, Any] = strict_json(analyze_basic(data))
    return result


def test_win_rates_of_zero_and_one_draw_their_points_and_intervals() -> None:
    basic = judged(3)
    entries = basic["perModel"]["m:a"]["values"]
    # The input: ends a rounding error past their points (Wilson's at n = 3).
    entries["Harm_Prevention"]["confidenceInterval"]["lower"] = 5.551115123125783e-17
    entries["Honesty"]["confidenceInterval"]["upper"] = 0.9999999999999999
    ax = win_rates(basic).axes[0]
    (container,) = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    points, _, (bars,) = container.lines
    assert np.asarray(points.get_xdata()).tolist() == [
        0.0,
        1.0,
    ]  # Harm_Prevention, Honesty (sorted)
    for (x0, _), (x1, _) in bars.get_segments():
        assert 0.0 <= x0 <= x1 <= 1.0
    (lose, _), (_, win) = bars.get_segments()
    assert lose[0] == 0.0 and win[0] == 1.0  # each bar starts at its point, not beyond it
    low, high = ax.get_xlim()
    assert low < 0.0 and high > 1.0  # the points at 0 and 1 are drawn whole


def open_ends(fig: Figure) -> list[tuple[float, float, float]]:
    """(from x, to x in axes fraction, y) of each open-interval arrow."""
    arrows = [t for t in fig.axes[0].texts if isinstance(t, Annotation)]
    return [(a.xyann[0], a.xy[0], a.xy[1]) for a in arrows if a.get_gid() == OPEN_END_GID]


def test_an_unbounded_side_is_an_arrow_to_the_edge() -> None:
    basic = judged(5)
    entries = basic["perModel"]["m:a"]["values"]
    entries["Honesty"]["confidenceInterval"]["upper"] = None
    entries["Harm_Prevention"]["confidenceInterval"] = {"lower": None, "upper": 0.4}
    fig = win_rates(basic)
    assert sorted(open_ends(fig)) == [(0.0, 0.0, 0.0), (1.0, 1.0, 1.0)]
    (container,) = [c for c in fig.axes[0].containers if isinstance(c, ErrorbarContainer)]
    _, _, (bars,) = container.lines
    (lose_low, _), (lose_high, _) = bars.get_segments()[0]
    assert (lose_low, lose_high) == (0.0, 0.4)  # the bounded side still drawn
    rendered(fig)

    sensitivity = {
        "valueSensitivity": {
            "m:a": {"Stakes": {"coefficient": 0.3, "ci95": [0.1, None], "value": "Harm"}},
            "m:b": {"Risk": {"coefficient": -0.2, "ci95": None}},
        }
    }
    fig = value_sensitivity(sensitivity)
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert ticks == ["Risk", "Harm (Stakes)"]  # a dimension only the second model measured
    assert [(x, edge) for x, edge, _ in open_ends(fig)] == [(0.3, 1.0)]
    rendered(fig)


def test_nothing_to_draw_is_said_for_every_missing_section() -> None:
    messages = {
        name: " ".join(t.get_text() for t in fig.axes[0].texts)
        for name, fig in analysis_figures({}, {}).items()
    }
    assert messages == {
        "value_sensitivity": "no dimensions: nothing to measure",
        "win_rates": "no judged transcripts: win rates need judges",
        "agreement_heatmap": "one model: nothing to compare",
        "dimension_effects": "no dimensions",
        "pca_scatter": "not available",
    }
