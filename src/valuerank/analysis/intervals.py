"""Intervals, multiple-testing corrections and effect-size words, shared by every analysis.

Each function is vectorised where callers pass many figures at once (win rates of every
model × value), and gives defined values on degenerate input: an empty count gives the
whole [0, 1], a sample too small for an interval gives None — never NaN.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from scipy import stats

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
    fpc: float | None = None,
) -> tuple[FloatArray, FloatArray]:
    """Wilson score interval(s) for successes/trials (Wilson 1927), elementwise.

    With a finite-population correction `fpc` the binomial variance p(1-p)/n is scaled by
    fpc², i.e. the interval is Wilson's at the effective size n / fpc² (fpc = 0: the
    proportion itself). trials = 0 gives [0, 1].
    """
    k = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    z = z_of(level)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(n > 0, k / np.maximum(n, 1), 0.5)
        if fpc is not None and fpc <= 0:
            point = np.where(n > 0, p, np.nan)
            lower, upper = point, point
        else:
            n_eff = n / (fpc * fpc) if fpc is not None else n
            denom = 1 + z * z / n_eff
            centre = (p + z * z / (2 * n_eff)) / denom
            half = z * np.sqrt(p * (1 - p) / n_eff + z * z / (4 * n_eff * n_eff)) / denom
            lower, upper = centre - half, centre + half
    lower = np.where(n > 0, np.clip(lower, 0.0, 1.0), 0.0)
    upper = np.where(n > 0, np.clip(upper, 0.0, 1.0), 1.0)
    return lower, upper


def mean_interval(
    values: npt.ArrayLike, *, level: float = LEVEL, fpc: float | None = None
) -> tuple[float, float] | None:
    """Student-t interval of a mean (times the finite-population correction); None for
    fewer than two values."""
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if x.size < 2:
        return None
    mean = float(x.mean())
    se = float(x.std(ddof=1)) / math.sqrt(x.size) * (1.0 if fpc is None else fpc)
    half = float(stats.t.ppf(0.5 + level / 2, x.size - 1)) * se
    return mean - half, mean + half


def correlation_interval(
    r: float, n: int, *, level: float = LEVEL, spearman: bool = False
) -> tuple[float, float] | None:
    """Fisher z interval of a correlation: se = 1/sqrt(n-3) for Pearson, the Bonett–Wright
    se = sqrt((1 + r²/2)/(n-3)) for Spearman (Bonett & Wright 2000). None for n ≤ 3."""
    if n <= 3 or not math.isfinite(r):
        return None
    if abs(r) >= 1.0:
        return r, r
    se = math.sqrt((1 + r * r / 2) / (n - 3)) if spearman else 1 / math.sqrt(n - 3)
    z = math.atanh(r)
    half = z_of(level) * se
    return math.tanh(z - half), math.tanh(z + half)


def holm(p_values: npt.ArrayLike) -> FloatArray:
    """Holm's step-down adjusted p-values: the running maximum of (m − k + 1)·p₍ₖ₎, capped
    at 1 (Holm 1979). Written out because statsmodels' `multipletests(method="holm")` runs a
    full garbage collection on every call (~40 ms), too slow for many small families."""
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


def interpret_d(d: float | None) -> str:
    """Cohen's (1988) words for a standardised mean difference."""
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
