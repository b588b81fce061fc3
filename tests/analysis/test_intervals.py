"""Intervals and corrections against textbook values and statsmodels/scipy references."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from valuerank.analysis.intervals import (
    adjust,
    correlation_interval,
    holm,
    interpret_d,
    mean_interval,
    wilson,
)


def test_wilson_textbook_value() -> None:
    lower, upper = wilson(30, 100)
    assert (round(float(lower), 4), round(float(upper), 4)) == (0.2189, 0.3958)


def test_wilson_matches_statsmodels_elementwise() -> None:
    k = np.array([0, 1, 5, 17, 40, 40])
    n = np.array([3, 1, 9, 20, 40, 100])
    lower, upper = wilson(k, n, level=0.9)
    ref_lo, ref_hi = proportion_confint(k, n, alpha=0.1, method="wilson")
    np.testing.assert_allclose(lower, ref_lo, atol=1e-12)
    np.testing.assert_allclose(upper, ref_hi, atol=1e-12)


def test_wilson_of_nothing_is_the_whole_interval() -> None:
    lower, upper = wilson(np.array([0]), np.array([0]))
    assert (float(lower[0]), float(upper[0])) == (0.0, 1.0)


def test_wilson_at_an_effective_size_keeps_the_proportion_and_changes_the_width() -> None:
    lower, upper = wilson(4, 12, effective=30.0)
    ref_lo, ref_hi = proportion_confint(4 / 12 * 30, 30, method="wilson")
    assert float(lower) == pytest.approx(ref_lo, abs=1e-12)
    assert float(upper) == pytest.approx(ref_hi, abs=1e-12)
    plain = wilson(4, 12)
    assert float(upper) - float(lower) < float(plain[1]) - float(plain[0])
    fewer = wilson(4, 12, effective=3.0)
    assert float(fewer[1]) - float(fewer[0]) > float(plain[1]) - float(plain[0])
    unusable = wilson(np.array([4]), np.array([12]), effective=np.array([np.nan]))
    assert float(unusable[0][0]) == pytest.approx(float(plain[0]))


def test_mean_interval_is_students_t() -> None:
    x = np.array([1.0, 2, 2, 3, 5, 4, 4])
    ref = stats.t.interval(0.95, x.size - 1, loc=x.mean(), scale=stats.sem(x))
    assert mean_interval(x) == pytest.approx(ref)
    assert mean_interval(np.array([3.0])) is None


def test_pearson_interval_matches_scipy() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=40)
    y = x + rng.normal(size=40)
    result = stats.pearsonr(x, y)
    ref = result.confidence_interval(0.95)
    ours = correlation_interval(float(result.statistic), 40)
    assert ours == pytest.approx((ref.low, ref.high))
    assert correlation_interval(0.5, 3) is None
    assert correlation_interval(1.0, 10) == (1.0, 1.0)


def test_spearman_interval_uses_the_bonett_wright_standard_error() -> None:
    r, n = 0.6, 30
    se = math.sqrt((1 + r * r / 2) / (n - 3))
    z = math.atanh(r)
    expected = (math.tanh(z - 1.959963984540054 * se), math.tanh(z + 1.959963984540054 * se))
    assert correlation_interval(r, n, spearman=True) == pytest.approx(expected)


def test_holm_is_monotone_and_matches_statsmodels() -> None:
    p = np.array([0.01, 0.04, 0.03, 0.005, 0.2, 0.04])
    ours = holm(p)
    ref = multipletests(p, method="holm")[1]
    np.testing.assert_allclose(ours, ref)
    order = np.argsort(p, kind="stable")
    assert np.all(np.diff(ours[order]) >= 0)  # a running maximum: never decreases


def test_adjust_leaves_untested_entries_out_of_the_family() -> None:
    adjusted, rejected = adjust([0.01, None, 0.04], "holm")
    assert adjusted[1] is None and rejected[1] is False
    assert adjusted[0] == pytest.approx(0.02) and adjusted[2] == pytest.approx(0.04)
    bh, _ = adjust([0.01, 0.02, 0.03, None, 0.5], "fdr_bh")
    ref = multipletests([0.01, 0.02, 0.03, 0.5], method="fdr_bh")[1]
    assert [x for x in bh if x is not None] == pytest.approx(list(ref))
    assert adjust([None, None]) == ([None, None], [False, False])


def test_cohens_words() -> None:
    assert [interpret_d(d) for d in (0.1, -0.3, 0.6, -2.0, None)] == [
        "negligible",
        "small",
        "medium",
        "large",
        "undefined",
    ]
