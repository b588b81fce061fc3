"""The edges of value sensitivity that a user reads: when an interval is given at all (G > K
scenarios, not an exact fit, a standard error above 0) and the sentence written for a
coefficient of 0 or an interval that touches 0."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from valuerank.analysis.sensitivity import fit_one
from valuerank.analysis.sensitivity_words import sentence

LABELS = {"1": "strongly oppose the plan", "5": "strongly support the plan"}


def _entry(coefficient: float | None, ci: list[float] | None, status: str = "ok") -> dict[str, Any]:
    return {"value": "Freedom", "coefficient": coefficient, "ci95": ci, "status": status}


def test_an_interval_needs_one_scenario_more_than_coefficients() -> None:
    """An intercept and one slope (K = 2): 3 scenarios (G = K + 1) give an interval, 2 do not."""
    levels = np.array([1.0, 1, 2, 2, 3, 3])
    decisions = np.array([1.0, 3, 2, 4, 3, 5.5])
    groups = np.repeat([0, 1, 2], 2)
    (estimate,), withheld = fit_one(decisions, levels[:, None], groups)
    assert withheld is None
    assert estimate.lower is not None and estimate.upper is not None
    assert estimate.coefficient is not None
    assert estimate.lower < estimate.coefficient < estimate.upper
    assert estimate.p_value is not None
    (estimate,), withheld = fit_one(decisions[:4], levels[:4, None], groups[:4])
    assert withheld == "few"
    assert estimate.coefficient == pytest.approx(1.0)
    assert (estimate.lower, estimate.upper, estimate.p_value) == (None, None, None)


def test_the_exact_fit_tolerance() -> None:
    """Residuals within 1e-9 of 0 are an exact fit (no interval); 1e-7 is noise to measure."""
    levels = np.repeat([1.0, 2, 3], 2)
    groups = np.repeat([0, 1, 2], 2)
    rounding = 1 + levels + np.array([1e-12, -1e-12, 0, 0, 0, 0])
    (estimate,), withheld = fit_one(rounding, levels[:, None], groups)
    assert withheld == "exact" and estimate.lower is None
    assert estimate.coefficient == pytest.approx(1.0)
    noise = 1 + levels + np.array([1e-7, -1e-7, 2e-7, 0, 0, -1e-7])
    (estimate,), withheld = fit_one(noise, levels[:, None], groups)
    assert withheld is None and estimate.lower is not None


def test_a_zero_standard_error_gives_no_interval() -> None:
    """Residuals that cancel within every scenario leave a cluster-robust variance of exactly
    0: the coefficient is shown, without a zero-width interval or a p-value of 0."""
    levels = np.repeat([0.0, 0, 1, 1], 2)
    groups = np.repeat([0, 1, 2, 3], 2)
    decisions = 1 + levels + np.tile([1.0, -1.0], 4)
    (estimate,), withheld = fit_one(decisions, levels[:, None], groups)
    assert withheld is None
    assert estimate.coefficient == pytest.approx(1.0)
    assert (estimate.lower, estimate.upper, estimate.p_value) == (None, None, None)


@pytest.mark.parametrize(
    ("coefficient", "ci", "expected"),
    [
        # 0 reads as a move towards the upper end, by 0.00, its interval including no effect.
        (
            0.0,
            [-0.2, 0.3],
            "a stronger Freedom stake moves m towards 'support the plan' by 0.00 points per "
            "score unit [-0.20, 0.30] (the interval includes no effect)",
        ),
        # An interval whose end is exactly 0 includes no effect…
        (
            0.4,
            [0.0, 0.8],
            "a stronger Freedom stake moves m towards 'support the plan' by 0.40 points per "
            "score unit [0.00, 0.80] (the interval includes no effect)",
        ),
        # …one that stops short of it does not.
        (
            0.4,
            [0.001, 0.8],
            "a stronger Freedom stake moves m towards 'support the plan' by 0.40 points per "
            "score unit [0.00, 0.80]",
        ),
        # A negative coefficient is a move towards the lower end, its interval mirrored.
        (
            -0.4,
            [-0.8, 0.0],
            "a stronger Freedom stake moves m towards 'oppose the plan' by 0.40 points per "
            "score unit [0.00, 0.80] (the interval includes no effect)",
        ),
        (
            -0.4,
            [-0.7, -0.1],
            "a stronger Freedom stake moves m towards 'oppose the plan' by 0.40 points per "
            "score unit [0.10, 0.70]",
        ),
        (
            1.25,
            None,
            "a stronger Freedom stake moves m towards 'support the plan' by 1.25 points per "
            "score unit",
        ),
    ],
)
def test_the_sentence_users_read(coefficient: float, ci: list[float] | None, expected: str) -> None:
    assert sentence("m", _entry(coefficient, ci), LABELS) == expected


def test_the_sentence_without_scale_labels_or_estimate() -> None:
    assert sentence("m", _entry(0.0, None), None).startswith(
        "a stronger Freedom stake moves m towards higher decisions by 0.00"
    )
    assert "towards lower decisions by 0.50" in sentence("m", _entry(-0.5, None), {})
    assert (
        sentence("m", _entry(None, None, "no_data"), LABELS)
        == "Freedom: no estimate for m (no data)"
    )
