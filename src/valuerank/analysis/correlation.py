"""Pearson and Spearman correlations with their two-sided p-values, defined or None.

Spearman's ρ is Pearson's r of the ranks (average ranks for ties), so one function computes
both; the p-value is the t approximation with n − 2 degrees of freedom, as scipy's. They are
written over plain arrays (not `scipy.stats.pearsonr`) because the analysis calls them for
every pair of models and every model × dimension, where scipy's per-call overhead dominates;
the tests check them against scipy.
"""

from __future__ import annotations

import math

from scipy import stats

from valuerank.analysis.data import FloatArray

MIN_SHARED = 3  # observations a correlation needs


def pearson(x: FloatArray, y: FloatArray) -> tuple[float | None, float | None]:
    """Pearson's r and its two-sided p-value; (None, None) when a side is constant or n < 3."""
    n = x.size
    if n < MIN_SHARED:
        return None, None
    dx, dy = x - x.mean(), y - y.mean()
    denom = math.sqrt(float(dx @ dx) * float(dy @ dy))
    if denom == 0:
        return None, None
    r = max(-1.0, min(1.0, float(dx @ dy) / denom))
    if abs(r) >= 1.0:
        return r, 0.0
    t = r * math.sqrt((n - 2) / (1 - r * r))
    return r, float(2 * stats.t.sf(abs(t), n - 2))


def spearman(a: FloatArray, b: FloatArray) -> tuple[float | None, float | None]:
    """Spearman's ρ and its two-sided p-value; (None, None) when undefined."""
    if a.size < MIN_SHARED:
        return None, None
    return pearson(stats.rankdata(a), stats.rankdata(b))
