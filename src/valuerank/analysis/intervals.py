"""Intervals, multiple-testing corrections and effect sizes, shared by every analysis.

Each function is vectorised where callers pass many figures at once (win rates of every
model × value), and gives defined values on degenerate input: an empty count gives the
whole [0, 1], a sample too small for an interval gives None — never NaN.

The per-model figures of a run take the scenario as the unit and weigh the finite population
into their variance (clustered.py): Wilson's interval at Kish's effective size (`effective`),
a t interval of the two-stage variance. Figures that cannot separate the within- from the
between-scenario variance (comparison bootstraps, Bradley–Terry, correlations) take no
correction: their scenarios count as a sample of an unbounded population.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

FloatArray = npt.NDArray[np.float64]
Correction = Literal["holm", "fdr_bh"]
LEVEL = 0.95


def z_of(level: float) -> float:
    return float(stats.norm.ppf(0.5 + level / 2))


def wilson(
    successes: npt.ArrayLike,
    trials: npt.ArrayLike,
    *,
    level: float = LEVEL,
    effective: npt.ArrayLike | None = None,
) -> tuple[FloatArray, FloatArray]:
    """Wilson score interval(s) for successes/trials (Wilson 1927; statsmodels'
    `proportion_confint(method="wilson")`), elementwise.

    `effective`: the effective sample size(s) for the width — the same proportion, Wilson's
    interval at that size (Korn & Graubard 1998; clustered.effective_size for transcripts
    clustered by scenario). trials = 0 gives [0, 1]."""
    k = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    some = n > 0
    p = np.where(some, k / np.maximum(n, 1), 0.5)
    size = n if effective is None else np.asarray(effective, dtype=float)
    n_eff = np.where(np.isfinite(size) & (size > 0), size, np.maximum(n, 1))
    n_eff = np.maximum(n_eff, 1e-9)
    lower, upper = proportion_confint(p * n_eff, n_eff, alpha=1 - level, method="wilson")
    return (
        np.where(some, np.asarray(lower, dtype=float), 0.0),
        np.where(some, np.asarray(upper, dtype=float), 1.0),
    )


def mean_interval(values: npt.ArrayLike, *, level: float = LEVEL) -> tuple[float, float] | None:
    """Student-t interval of the mean of independent values; None for fewer than two."""
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if x.size < 2:
        return None
    mean = float(x.mean())
    se = float(x.std(ddof=1)) / math.sqrt(x.size)
    half = float(stats.t.ppf(0.5 + level / 2, x.size - 1)) * se
    return mean - half, mean + half


def correlation_interval(
    r: float, n: int, *, level: float = LEVEL, spearman: bool = False
) -> tuple[float, float] | None:
    """Fisher z interval of a correlation: se = 1/sqrt(n-3) for Pearson (as scipy's
    `pearsonr(...).confidence_interval()`, which the analysis uses where it has the samples),
    the Bonett–Wright se = sqrt((1 + r²/2)/(n-3)) for Spearman (Bonett & Wright 2000; no
    library provides it). None for n ≤ 3."""
    if n <= 3 or not math.isfinite(r):
        return None
    if abs(r) >= 1.0:
        return r, r
    se = math.sqrt((1 + r * r / 2) / (n - 3)) if spearman else 1 / math.sqrt(n - 3)
    z = math.atanh(r)
    half = z_of(level) * se
    return math.tanh(z - half), math.tanh(z + half)


def percentile_interval(draws: FloatArray, level: float = LEVEL) -> tuple[Any, Any]:
    """The percentile bootstrap interval of `draws` along axis 0 (elementwise for more
    axes)."""
    tail = (1 - level) / 2 * 100
    return np.percentile(draws, tail, axis=0), np.percentile(draws, 100 - tail, axis=0)


def holm(p_values: npt.ArrayLike) -> FloatArray:
    """Holm's step-down adjusted p-values: the running maximum of (m − k + 1)·p₍ₖ₎, capped
    at 1 (Holm 1979); the tests check it against statsmodels' `multipletests`.

    Written out, not statsmodels, for a measured reason: `multipletests(method="holm")`
    calls `gc.collect()` on every call (statsmodels 0.15, multitest.py), 63 ms per call on
    the benchmark machine with a small heap and 163 ms with 300,000 live objects. The basic
    analysis corrects 1 + (models + 1) families (agreement; dimensions pooled and per model):
    12 calls, ~750 ms, for the 10,000-transcript run whose budget is 200 ms."""
    p = np.asarray(p_values, dtype=float)
    order = np.argsort(p, kind="stable")
    m = p.size
    stepped = np.maximum.accumulate(p[order] * np.arange(m, 0, -1))
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(stepped, 1.0)
    return adjusted


def adjust(
    p_values: Sequence[float | None], method: Correction = "holm", alpha: float = 0.05
) -> tuple[list[float | None], list[bool]]:
    """Adjusted p-values and rejections at `alpha`: Holm (monotone, running maximum) or
    Benjamini–Hochberg (scipy's `false_discovery_control`); None entries (no test) stay
    None/False and are not part of the family."""
    present = [i for i, p in enumerate(p_values) if p is not None]
    adjusted: list[float | None] = [None] * len(p_values)
    rejected = [False] * len(p_values)
    if not present:
        return adjusted, rejected
    raw = np.array([p_values[i] for i in present], dtype=float)
    corrected = holm(raw) if method == "holm" else stats.false_discovery_control(raw, method="bh")
    for slot, i in enumerate(present):
        adjusted[i] = float(corrected[slot])
        rejected[i] = bool(corrected[slot] <= alpha)
    return adjusted, rejected


def cohens_h(p1: npt.ArrayLike, p2: npt.ArrayLike) -> FloatArray:
    """Cohen's h = 2·asin(√p2) − 2·asin(√p1): the difference of two proportions on the
    arcsine (variance-stabilising) scale, so a move from 0.5 to 0.6 and one from 0.9 to 1.0
    are not counted alike (Cohen 1988, ch. 6; statsmodels' `proportion_effectsize(p2, p1)`).
    The same words as d apply (0.2 small, 0.5 medium, 0.8 large)."""
    a = np.clip(np.asarray(p1, dtype=float), 0.0, 1.0)
    b = np.clip(np.asarray(p2, dtype=float), 0.0, 1.0)
    h: FloatArray = 2 * np.arcsin(np.sqrt(b)) - 2 * np.arcsin(np.sqrt(a))
    return h


def interpret_d(d: float | None) -> str:
    """Cohen's (1988) words for a standardised difference (d, d_z or h)."""
    if d is None:
        return "undefined"
    size = abs(d)
    if size < 0.2:
        return "negligible"
    if size < 0.5:
        return "small"
    if size < 0.8:
        return "medium"
    return "large"


def interval_dict(
    bounds: tuple[float, float] | None, *, method: str, level: float = LEVEL
) -> dict[str, Any] | None:
    if bounds is None:
        return None
    return {"lower": bounds[0], "upper": bounds[1], "level": level, "method": method}
