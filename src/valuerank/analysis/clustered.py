"""The scenario as the unit: a per-model figure's variance when samples repeat a scenario.

A run asks each model about n of a definition's N scenarios (drawn without replacement) and
m times about each. A model's mean decision or win rate is a ratio R = Σⱼ aⱼ / Σⱼ bⱼ of
per-scenario totals (aⱼ: the decisions' sum or the times a value was prioritised; bⱼ: the
decided or decisive transcripts), and its transcripts are not independent: samples of one
scenario share the scenario. Its variance is Cochran's two-stage estimator (Sampling
Techniques, 3rd ed., th. 10.2 and § 11.8 for unequal sizes; the second stage draws from the
unbounded population of the model's answers):

    v = g · v_between + (1 − g) · v_within

- v_between = n/(n − 1) · Σⱼ (aⱼ − R·bⱼ)² / (Σ b)²: the scenario-clustered (CR1) variance,
  exactly statsmodels' OLS `cov_type="cluster"` with the scenario as group. Alone, it is the
  variance when the scenarios are a sample of an unbounded population.
- v_within = s_w² / Σ b with s_w² the pooled within-scenario variance of the samples. Alone,
  it is the variance when every scenario was run: the models' answers still vary.
- g = fpc² = (N − n)/(N − 1) with n the figure's own scenarios (`sampling.between_weights`:
  a model that decided fewer scenarios than the run asked rests on fewer): 1 for an unknown
  N, 0 when every scenario of the population was decided.

E[v] = g·S_b²/n + S_w²/(n·m) falls as n grows, so expanding a run narrows its intervals in
expectation all the way to 100 %. With one sample per scenario the samples' own variance
cannot be told apart from the scenarios' spread, so v = v_between whatever g (conservative:
the correction needs repeated samples). t intervals use Satterthwaite's degrees of freedom.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats

from valuerank.analysis.intervals import LEVEL

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class TwoStage:
    """Ratio estimates and their two-stage variances, elementwise over the leading axes."""

    estimate: FloatArray  # R; NaN without units
    variance: FloatArray  # v; NaN when not estimable (one scenario, no within variance)
    df: FloatArray  # Satterthwaite degrees of freedom of v
    scenarios: IntArray  # scenarios with at least one unit (the clusters)
    units: FloatArray  # Σ b
    between_weight: FloatArray  # the g actually used: 1 where the within variance is unknown
    between: FloatArray  # v_between
    within: FloatArray  # v_within; NaN when no scenario has two units

    @property
    def corrected(self) -> BoolArray:
        """Where the finite population lowered the weight of the between-scenario part."""
        corrected: BoolArray = self.between_weight < 1
        return corrected


def cell_totals(
    model_idx: IntArray, scenario_idx: IntArray, y: FloatArray, shape: tuple[int, int]
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(sums, counts, within sums of squares Σ(y − ȳⱼ)²), each (models, scenarios), of the
    finite values of y."""
    keep = ~np.isnan(y)
    flat = model_idx[keep] * shape[1] + scenario_idx[keep]
    size = shape[0] * shape[1]
    x = y[keep]
    sums: FloatArray = np.bincount(flat, weights=x, minlength=size).astype(float).reshape(shape)
    counts: FloatArray = np.bincount(flat, minlength=size).astype(float).reshape(shape)
    squares = np.bincount(flat, weights=x * x, minlength=size).reshape(shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        within: FloatArray = np.where(
            counts > 0, squares - sums * sums / np.maximum(counts, 1), 0.0
        )
    return sums, counts, np.maximum(within, 0.0)


def two_stage(
    sums: npt.ArrayLike,
    counts: npt.ArrayLike,
    within_ss: npt.ArrayLike,
    between_weight: float | npt.ArrayLike,
) -> TwoStage:
    """The two-stage variance of Σa/Σb with scenarios along the last axis (module docstring);
    `within_ss` is each scenario's Σ(y − ȳⱼ)² over its units; `between_weight` is one g or
    one per figure (sampling.between_weights of each figure's scenarios)."""
    a = np.asarray(sums, dtype=float)
    b = np.asarray(counts, dtype=float)
    q = np.asarray(within_ss, dtype=float)
    n = (b > 0).sum(axis=-1)
    units = b.sum(axis=-1)
    df_within = np.maximum(b - 1, 0).sum(axis=-1)
    known = df_within >= 1
    g = np.where(known, np.clip(np.asarray(between_weight, dtype=float), 0.0, 1.0), 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        estimate = np.where(units > 0, a.sum(axis=-1) / units, np.nan)
        residual = a - np.nan_to_num(estimate)[..., None] * b
        between = np.where(
            n >= 2, n / (n - 1) * (residual * residual).sum(axis=-1) / (units * units), np.nan
        )
        within = np.where(known, q.sum(axis=-1) / df_within / units, np.nan)
        part_b = np.where(g > 0, g * between, 0.0)  # a full run needs no between part
        part_w = np.where(g < 1, (1 - g) * within, 0.0)
        variance = part_b + part_w
        spread = np.where(g > 0, part_b * part_b / (n - 1), 0.0) + np.where(
            g < 1, part_w * part_w / df_within, 0.0
        )
        df = np.where(spread > 0, variance * variance / spread, np.maximum(n - 1, 1))
    return TwoStage(
        estimate=estimate,
        variance=variance,
        df=df,
        scenarios=n.astype(np.intp),
        units=units,
        between_weight=g,
        between=between,
        within=within,
    )


def t_interval(
    estimate: float, variance: float, df: float, *, level: float = LEVEL
) -> tuple[float, float] | None:
    """estimate ± t(df)·√variance; None when the variance is not estimable, the estimate
    itself when it is 0."""
    if not (math.isfinite(estimate) and math.isfinite(variance)):
        return None
    if variance <= 0:
        return estimate, estimate
    half = float(stats.t.ppf(0.5 + level / 2, df)) * math.sqrt(variance)
    return estimate - half, estimate + half


def effective_size(fit: TwoStage) -> FloatArray:
    """Kish's effective sample size of a proportion: Σb / deff with deff = v / (s²/Σb) and
    s² = R(1 − R)·Σb/(Σb − 1), for Wilson's interval at that size (Korn & Graubard 1998).
    Where the data cannot tell (R = 0 or 1, v = 0, a single scenario), the same two-stage
    weighting of the two ways to count: 1 / (g/n + (1 − g)/Σb)."""
    r, v, units = fit.estimate, fit.variance, fit.units
    with np.errstate(invalid="ignore", divide="ignore"):
        kish = units * r * (1 - r) / ((units - 1) * v)
        fallback = 1 / (
            fit.between_weight / np.maximum(fit.scenarios, 1)
            + (1 - fit.between_weight) / np.maximum(units, 1)
        )
    usable = np.isfinite(kish) & (kish > 0)
    size: FloatArray = np.where(usable, kish, fallback)
    return size


def design_factor(fit: TwoStage) -> FloatArray:
    """√(v / v_between): what the finite population does to a scenario-level standard error
    (1 with one sample per scenario or an unknown N). A scenario bootstrap's deviations
    times this factor get the same correction as an analytic one."""
    with np.errstate(invalid="ignore", divide="ignore"):
        factor = np.sqrt(fit.variance / fit.between)
    result: FloatArray = np.where(np.isfinite(factor), factor, 1.0)
    return result
