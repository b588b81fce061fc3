"""Synthetic runs with known structure, for benchmarks, examples and tests (no I/O).

Each model has its own weight per dimension (the utilitarian-like models share a direction,
a contrarian mirrors it), decisions are `round(3 + Σ wᵢ·(levelᵢ − mid) + noise)` clipped to
1–5, a model refuses a share of scenarios, some (model, scenario) cells are missing, some
scenarios lack a dimension, and a judge consensus names the values tied to the dimensions
that pushed the decision up (prioritised) or down (deprioritised).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from valuerank.analysis.data import AnalysisInput, ScenarioInfo
from valuerank.analysis.sampling import SampleBasis


@dataclass(frozen=True)
class SyntheticSpec:
    models: int = 5
    scenarios: int = 200
    dimensions: int = 4
    levels: int = 3
    samples: int = 1
    values: int = 6
    refusal_rate: float = 0.05
    missing_rate: float = 0.03
    missing_dimension_rate: float = 0.0
    noise: float = 0.5
    judged: bool = True
    sample: SampleBasis | None = None
    seed: int = 7


def synthetic_run(spec: SyntheticSpec = SyntheticSpec()) -> AnalysisInput:
    rng = np.random.default_rng(spec.seed)
    dims = [f"Dim{k + 1}" for k in range(spec.dimensions)]
    values = [f"Value{k + 1}" for k in range(spec.values)]
    value_of_dim = [values[k % len(values)] for k in range(len(dims))] if values else []
    scenario_ids = [f"scenario_{j:05d}" for j in range(spec.scenarios)]
    levels = rng.integers(1, spec.levels + 1, size=(spec.scenarios, spec.dimensions))
    scenarios: dict[str, ScenarioInfo] = {}
    for j, sid in enumerate(scenario_ids):
        present = {
            d: float(levels[j, k])
            for k, d in enumerate(dims)
            if rng.random() >= spec.missing_dimension_rate
        }
        scenarios[sid] = ScenarioInfo(name=f"Scenario {j}", levels=present)
    base = rng.normal(0, 1, size=spec.dimensions)
    weights = np.empty((spec.models, spec.dimensions))
    for i in range(spec.models):
        if i % 5 == 1:  # a contrarian
            weights[i] = -base + rng.normal(0, 0.1, spec.dimensions)
        elif i % 5 == 3:  # its own priorities
            weights[i] = rng.normal(0, 1, spec.dimensions)
        else:
            weights[i] = base + rng.normal(0, 0.3, spec.dimensions)
    models = [f"provider:model-{i:02d}" for i in range(spec.models)]
    refusal = np.full(spec.models, spec.refusal_rate)
    mid = (spec.levels + 1) / 2
    grid = np.meshgrid(
        np.arange(spec.models), np.arange(spec.scenarios), np.arange(spec.samples), indexing="ij"
    )
    keep = rng.random(grid[0].size) >= spec.missing_rate
    rows_m, rows_s = grid[0].ravel()[keep], grid[1].ravel()[keep]
    push = (weights[rows_m] * (levels[rows_s] - mid)).sum(axis=1) * 2 / max(spec.levels - 1, 1)
    raw = 3 + push + rng.normal(0, spec.noise, rows_m.size)
    codes = np.clip(np.floor(raw + 0.5), 1, 5)
    refused = rng.random(rows_m.size) < refusal[rows_m]
    decisions: list[int | None] = [
        None if r else int(c) for c, r in zip(codes, refused, strict=True)
    ]
    reasons = ["refusal" if r else None for r in refused]
    contributions = weights[rows_m] * (levels[rows_s] - mid)
    prioritized = [
        sorted({value_of_dim[k] for k in np.flatnonzero(row > 0.25)}) if values else []
        for row in contributions
    ]
    deprioritized = [
        sorted({value_of_dim[k] for k in np.flatnonzero(row < -0.25)} - set(p)) if values else []
        for row, p in zip(contributions, prioritized, strict=True)
    ]
    judged = [spec.judged] * rows_m.size
    return AnalysisInput.build(
        models=[models[i] for i in rows_m],
        scenario_ids=[scenario_ids[j] for j in rows_s],
        decisions=decisions,
        reasons=reasons,
        scenarios=scenarios,
        prioritized=prioritized,
        deprioritized=deprioritized,
        judged=judged,
        value_universe=values,
        sample=spec.sample,
    )


@dataclass(frozen=True)
class RecoverySpec:
    """A run from a known linear model, for parameter recovery: each model's decision is
    `round(3 + Σ effectᵢ·(levelᵢ − mid) + u_scenario + e)` clipped to 1–5, with a random
    effect u ~ N(0, scenario_sd) shared by a scenario's samples (what makes them dependent)
    and e ~ N(0, noise) per sample. With the defaults the latent decisions rarely leave
    [0.5, 5.5], so clipping is rare and rounding is unbiased to within 1e-4: the expected
    decision moves by `effectᵢ` points per score unit."""

    effects: tuple[tuple[float, ...], ...] = ((0.3, -0.2, 0.0), (0.0, 0.25, -0.15))
    scenarios: int = 40
    levels: int = 3
    samples: int = 3
    scenario_sd: float = 0.35
    noise: float = 0.6
    seed: int = 11


def recovery_run(spec: RecoverySpec = RecoverySpec()) -> AnalysisInput:
    rng = np.random.default_rng(spec.seed)
    dims = len(spec.effects[0])
    names = [f"Dim{k + 1}" for k in range(dims)]
    levels = rng.integers(1, spec.levels + 1, size=(spec.scenarios, dims))
    shared = rng.normal(0, spec.scenario_sd, size=(len(spec.effects), spec.scenarios))
    ids = [f"s{j:04d}" for j in range(spec.scenarios)]
    mid = (spec.levels + 1) / 2
    models, scenario_ids, decisions = [], [], []
    for i, effects in enumerate(spec.effects):
        latent = 3 + (levels - mid) @ np.asarray(effects) + shared[i]
        raw = np.repeat(latent, spec.samples) + rng.normal(
            0, spec.noise, latent.size * spec.samples
        )
        codes = np.clip(np.floor(raw + 0.5), 1, 5).astype(int)
        models += [f"model-{i}"] * codes.size
        scenario_ids += [ids[j] for j in np.repeat(np.arange(spec.scenarios), spec.samples)]
        decisions += codes.tolist()
    scenarios = {
        sid: ScenarioInfo(name=sid, levels={n: float(levels[j, k]) for k, n in enumerate(names)})
        for j, sid in enumerate(ids)
    }
    return AnalysisInput.build(
        models=models,
        scenario_ids=scenario_ids,
        decisions=decisions,
        reasons=[None] * len(decisions),
        scenarios=scenarios,
    )
