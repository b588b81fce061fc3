"""Runs with a known position and wording bias, for tests and parameter recovery (pure).

A persona decides a scenario from a latent position x in the definition's direction:
x = 3 + Σ effectᵢ·(levelᵢ − mid) + u_scenario (+ `wording_bias` for an alternative phrasing)
+ e per transcript. Asked as written it answers round(x + b), clipped to the 1–5 scale: a pull
of b = `position_bias` points towards the higher number *shown*. Asked reversed, the shown
scale runs the other way, so it answers round(6 − x + b) on the shown numbers, which maps
back (as definitions/presentation.map_decision does for a run) to 6 − that: as written
minus reversed of the mapped decision is 2b where nothing is clipped, less near the ends.
`true_effects` gives the design's expected order effect and phrasing shift with the
clipping, by integrating the rounding analytically (E[clip(round(z))] = 1 + Σₜ P(z > t),
t = 1.5 … 4.5) over many scenario draws.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from valuerank.analysis.data import AnalysisInput, FloatArray, ScenarioInfo

THRESHOLDS = np.array([1.5, 2.5, 3.5, 4.5])


@dataclass(frozen=True)
class PresentationSpec:
    """One simulated design: scenarios × phrasings × orders × samples per model."""

    scenarios: int = 30
    samples: int = 1
    phrasings: int = 1
    both_orders: bool = True
    position_bias: float = 0.0
    wording_bias: float = 0.0
    effects: tuple[float, ...] = (0.4, -0.3)
    levels: int = 3
    scenario_sd: float = 0.5
    noise: float = 0.7
    models: int = 1
    seed: int = 1


def scenario_id(j: int, levels: FloatArray) -> str:
    """`S007_Dim12_Dim23`: the combination id (the scenario unit) of scenario j."""
    parts = [f"Dim{k + 1}{int(level)}" for k, level in enumerate(levels)]
    return "_".join([f"S{j:03d}", *parts])


def _latent(spec: PresentationSpec, levels: FloatArray, shared: FloatArray) -> FloatArray:
    mid = (spec.levels + 1) / 2
    return np.asarray(3 + (levels - mid) @ np.asarray(spec.effects) + shared, dtype=float)


def presentation_run(spec: PresentationSpec = PresentationSpec()) -> AnalysisInput:
    rng = np.random.default_rng(spec.seed)
    dims = len(spec.effects)
    models, ids, decisions, orders, phrasings = [], [], [], [], []
    scenarios: dict[str, ScenarioInfo] = {}
    asked = (0, 1) if spec.both_orders else (0,)
    levels = rng.integers(1, spec.levels + 1, size=(spec.scenarios, dims)).astype(float)
    for m in range(spec.models):
        latent = _latent(spec, levels, rng.normal(0, spec.scenario_sd, spec.scenarios))
        for j in range(spec.scenarios):
            sid = scenario_id(j, levels[j])
            scenarios[sid] = ScenarioInfo(
                name=f"Scenario {j}", levels={f"Dim{d + 1}": levels[j, d] for d in range(dims)}
            )
            for k in range(1, spec.phrasings + 1):
                x = latent[j] + (spec.wording_bias if k > 1 else 0.0)
                for order in asked:
                    noise = rng.normal(0, spec.noise, spec.samples)
                    if order == 0:
                        codes = np.clip(np.floor(x + spec.position_bias + noise + 0.5), 1, 5)
                    else:  # answered on the reversed scale, mapped back: 6 − shown
                        shown = np.clip(np.floor(6 - x + spec.position_bias + noise + 0.5), 1, 5)
                        codes = 6 - shown
                    models += [f"model-{m}"] * spec.samples
                    ids += [sid] * spec.samples
                    decisions += [int(c) for c in codes]
                    orders += [order] * spec.samples
                    phrasings += ["" if k == 1 else f"Dim1o{k}"] * spec.samples
    return AnalysisInput.build(
        models=models,
        scenario_ids=ids,
        decisions=decisions,
        reasons=[None] * len(decisions),
        scenarios=scenarios,
        orders=orders,
        phrasings=phrasings,
    )


def expected_code(mean: FloatArray, sd: float) -> FloatArray:
    """E[clip(round(z), 1, 5)] for z ~ N(mean, sd²)."""
    z = (np.asarray(mean, dtype=float)[..., None] - THRESHOLDS) / sd
    return np.asarray(1 + stats.norm.cdf(z).sum(axis=-1), dtype=float)


def true_effects(spec: PresentationSpec, draws: int = 200_000) -> tuple[float, float]:
    """(order effect, phrasing shift) the design's analysis estimates: the expected
    per-scenario differences of the mapped decision, over the population of scenarios."""
    rng = np.random.default_rng(12345)
    levels = rng.integers(1, spec.levels + 1, size=(draws, len(spec.effects))).astype(float)
    x = _latent(spec, levels, rng.normal(0, spec.scenario_sd, draws))
    b, w, sd = spec.position_bias, spec.wording_bias, spec.noise

    def mapped(shift: float) -> tuple[FloatArray, FloatArray]:
        written = expected_code(x + shift + b, sd)
        turned = 6 - expected_code(6 - (x + shift) + b, sd)
        return written, turned

    first_w, first_r = mapped(0.0)
    other_w, other_r = mapped(w)
    share = 0.5 if spec.both_orders else 1.0
    phrasings = spec.phrasings
    if phrasings > 1:
        written = (first_w + (phrasings - 1) * other_w) / phrasings
        turned = (first_r + (phrasings - 1) * other_r) / phrasings
    else:
        written, turned = first_w, first_r
    order = float((written - turned).mean())
    first = first_w if not spec.both_orders else share * (first_w + first_r)
    other = other_w if not spec.both_orders else share * (other_w + other_r)
    return order, float((other - first).mean())
