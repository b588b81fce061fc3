"""`analyze:compare`: two runs paired on scenario identity, with significance.

For every model both runs have, its scores (mean decision per scenario) are paired over the
scenarios both runs decided, and its judged transcripts' value counts over the scenarios both
judged; the paired statistics are in paired.py (decision delta, Wilcoxon, d_z, rank-biserial,
McNemar/Stuart–Maxwell, per-value win-rate deltas with a permutation test and Cohen's h).
Every p-value of the comparison that can reject is corrected together (Benjamini–Hochberg
by default, or Holm); a test where nothing differs between the runs (p = 1 by construction,
`canReject` False) stays out of the family — 56 such tests beside 8 real ones turned a Holm
p of 0.0065 into 0.052 — and keeps pValueCorrected 1 (`methodsUsed.testsLeftOut` counts
them). The unit is the scenario throughout: a model's decisions are its mean per scenario,
its value counts are summed per scenario, and the bootstrap and permutations resample or
swap whole scenarios, so more samples of a scenario never count as more pairs. The
scenarios where the models moved most are listed. Models only one run has are named, not
compared. When either run is a sample, each run's basis is stated (`samples`, a
SAMPLED_RUN warning); the intervals carry no finite-population correction (paired.py: the
scenarios count as a sample of an unbounded population), and `samples.pairedPopulation` says
how many scenarios the pairs are drawn from (sampling.paired_population).

Each model's draws come from their own random streams, seeded by the comparison's seed, the
model id and the purpose: a model's intervals do not change when another model is added.
"""

from __future__ import annotations

import time
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from valuerank.analysis.data import AnalysisInput, FloatArray
from valuerank.analysis.intervals import Correction, adjust
from valuerank.analysis.output import clean
from valuerank.analysis.paired import INTERVAL_METHOD, decision_delta, value_deltas
from valuerank.analysis.sampling import SampleBasis, paired_population
from valuerank.analysis.version import CODE_VERSION
from valuerank.analysis.warning import AnalysisWarning
from valuerank.shapes import dump

BOOTSTRAP = 1000
SEED = 20240612
DIVERGED_LIMIT = 10
SMALL_PAIRED = 10
POPULATION_HOW = (
    "no finite-population correction: a scenario's mean difference keeps the models' "
    "randomness when every scenario is run, so the scenarios count as a sample of an "
    "unbounded population (conservative; expanding a run never widens an interval in "
    "expectation)"
)


@dataclass(frozen=True)
class _Side:
    """One run restricted to the shared scenarios (columns in `scenarios` order)."""

    cells: FloatArray  # (models, shared scenarios)
    prioritized: FloatArray  # (models, shared scenarios, values)
    deprioritized: FloatArray
    judged: FloatArray  # (models, shared scenarios): judged transcripts


def _side(data: AnalysisInput, models: list[str], scenarios: list[str], values: list[str]) -> _Side:
    m_pos = {m: i for i, m in enumerate(data.models)}
    s_pos = {s: i for i, s in enumerate(data.scenarios)}
    v_pos = {v: i for i, v in enumerate(data.values)}
    cells = data.cell_means()[np.ix_([m_pos[m] for m in models], [s_pos[s] for s in scenarios])]
    shape = (len(data.models), len(data.scenarios))
    flat = data.model_idx * shape[1] + data.scenario_idx
    size = shape[0] * shape[1]
    judged = np.bincount(flat, weights=data.judged.astype(float), minlength=size).reshape(shape)
    per_value = []
    for sign in (1, -1):
        counts = np.zeros((size, len(values)))
        for k, value in enumerate(values):
            j = v_pos.get(value)
            if j is not None:
                hits = (data.value_status[:, j] == sign).astype(float)
                counts[:, k] = np.bincount(flat, weights=hits, minlength=size)
        per_value.append(counts.reshape(*shape, len(values)))
    rows = [m_pos[m] for m in models]
    cols = [s_pos[s] for s in scenarios]
    return _Side(
        cells=cells,
        prioritized=per_value[0][np.ix_(rows, cols)],
        deprioritized=per_value[1][np.ix_(rows, cols)],
        judged=judged[np.ix_(rows, cols)].astype(float),
    )


def stream(seed: int, model: str, purpose: int) -> np.random.Generator:
    """The random stream of one model's draws of one kind (0: decision bootstrap, 1: value
    bootstrap, 2: value permutations)."""
    return np.random.default_rng([seed, zlib.crc32(model.encode()), purpose])


def _value_deltas(
    i: int, a: _Side, b: _Side, values: list[str], model: str, seed: int, draws: int
) -> dict[str, Any]:
    pairs = (a.judged[i] > 0) & (b.judged[i] > 0)
    n = int(pairs.sum())
    if n == 0:
        return {}
    return value_deltas(
        a.prioritized[i, pairs],
        a.deprioritized[i, pairs],
        b.prioritized[i, pairs],
        b.deprioritized[i, pairs],
        values,
        boot_rng=stream(seed, model, 1),
        perm_rng=stream(seed, model, 2),
        draws=draws,
    )


def _diverged(
    models: list[str], scenarios: list[str], names: dict[str, str], a: _Side, b: _Side
) -> list[dict[str, Any]]:
    delta = b.cells - a.cells  # (models, scenarios)
    both = ~np.isnan(delta)
    counts = both.sum(axis=0)
    with np.errstate(invalid="ignore"):
        spread = np.where(counts > 0, np.nansum(np.abs(delta), axis=0) / np.maximum(counts, 1), -1)
    order = [j for j in np.lexsort((np.arange(len(scenarios)), -spread)).tolist() if counts[j]]
    return [
        {
            "scenarioId": scenarios[j],
            "scenarioName": names.get(scenarios[j], scenarios[j]),
            "meanAbsDelta": float(spread[j]),
            "perModel": {
                models[i]: {
                    "baseline": float(a.cells[i, j]),
                    "comparison": float(b.cells[i, j]),
                    "delta": float(delta[i, j]),
                }
                for i in range(len(models))
                if both[i, j]
            },
        }
        for j in order[:DIVERGED_LIMIT]
    ]


def _coverage_warnings(
    baseline_only: list[str], comparison_only: list[str], shared_models: list[str],
    shared_scenarios: list[str],
) -> list[AnalysisWarning]:  # fmt: skip
    found = []
    if baseline_only or comparison_only:
        found.append(
            AnalysisWarning(
                "MODELS_NOT_SHARED",
                "Only the shared models are compared; "
                f"baseline only: {', '.join(baseline_only) or '-'}; "
                f"comparison only: {', '.join(comparison_only) or '-'}",
                "Add the missing models to the other run to compare them",
            )
        )
    if not shared_models:
        found.append(
            AnalysisWarning(
                "NO_SHARED_MODELS",
                "The two runs have no model in common",
                "Compare runs that share at least one model",
            )
        )
    if not shared_scenarios:
        found.append(
            AnalysisWarning(
                "NO_SHARED_SCENARIOS",
                "The two runs have no scenario in common",
                "Pairs need the same scenario ids: compare runs of the same definition (or a "
                "fork whose dimensions keep the ids)",
            )
        )
    return found


def pair_basis_warnings(
    baseline: SampleBasis | None, comparison: SampleBasis | None
) -> list[AnalysisWarning]:
    """SAMPLED_RUN naming each run's basis when either is a sample."""
    if not any(s is not None and s.sampled for s in (baseline, comparison)):
        return []
    bases = "; ".join(
        f"{side} {'(basis unknown)' if s is None else s.basis}"
        for side, s in (("baseline", baseline), ("comparison", comparison))
    )
    return [
        AnalysisWarning(
            "SAMPLED_RUN",
            f"At least one run is a sample: {bases}",
            "Intervals treat the scenarios as a sample of an unbounded population (no "
            "finite-population correction); expand the runs "
            "(`valuerank runs expand RUN --sample-percentage 100`) for the full figures",
        )
    ]


def compare(
    baseline: AnalysisInput,
    comparison: AnalysisInput,
    *,
    correction: Correction = "fdr_bh",
    alpha: float = 0.05,
    bootstrap: int = BOOTSTRAP,
    seed: int = SEED,
) -> dict[str, Any]:
    """The comparison of two runs (strict-JSON-ready)."""
    started = time.perf_counter()
    shared_models = sorted(set(baseline.models) & set(comparison.models))
    baseline_only = sorted(set(baseline.models) - set(comparison.models))
    comparison_only = sorted(set(comparison.models) - set(baseline.models))
    used_a = {baseline.scenarios[j] for j in np.unique(baseline.scenario_idx).tolist()}
    used_b = {comparison.scenarios[j] for j in np.unique(comparison.scenario_idx).tolist()}
    shared = sorted(used_a & used_b)
    values = sorted(set(baseline.values) | set(comparison.values))
    a = _side(baseline, shared_models, shared, values)
    b = _side(comparison, shared_models, shared, values)
    warnings = _coverage_warnings(baseline_only, comparison_only, shared_models, shared)
    warnings += pair_basis_warnings(baseline.sample, comparison.sample)
    population = paired_population(baseline.sample, comparison.sample)
    per_model: dict[str, Any] = {}
    per_value: dict[str, Any] = {}
    for i, model in enumerate(shared_models):
        per_model[model] = decision_delta(a.cells[i], b.cells[i], stream(seed, model, 0), bootstrap)
        per_value[model] = _value_deltas(i, a, b, values, model, seed, bootstrap)
        if 0 < per_model[model]["n"] < SMALL_PAIRED:
            warnings.append(
                AnalysisWarning(
                    "SMALL_PAIRED_SAMPLE",
                    f"{model} has only {per_model[model]['n']} scenarios decided in both runs",
                    "Tests have little power; read the intervals",
                )
            )
    tests: list[tuple[dict[str, Any], float | None]] = []
    for model in shared_models:
        entry = per_model[model]
        tests.append((entry["wilcoxon"], entry["wilcoxon"]["pValue"]))
        tests.append((entry["changedDecisions"], entry["changedDecisions"]["pValue"]))
        for value_entry in per_value[model].values():
            tests.append((value_entry, value_entry["pValue"]))
    family = [p if target.get("canReject", True) else None for target, p in tests]
    corrected, rejected = adjust(family, correction, alpha)
    left_out = 0
    for (target, p), p_adj, sig in zip(tests, corrected, rejected, strict=True):
        in_family = p is not None and target.get("canReject", True)
        left_out += p is not None and not in_family
        target["pValueCorrected"] = p_adj if in_family else p  # p = 1: still 1 corrected
        target["significant"] = sig
        target["inFamily"] = in_family
    if not baseline.judged.any() or not comparison.judged.any():
        warnings.append(
            AnalysisWarning(
                "NO_VALUE_JUDGMENTS",
                "At least one run has no judged transcripts: value deltas need judges on both",
                "Run both with --judge MODEL",
            )
        )
    names = dict(zip(baseline.scenarios, baseline.scenario_names, strict=True))
    names.update(zip(comparison.scenarios, comparison.scenario_names, strict=True))
    result = {
        "models": {
            "shared": shared_models,
            "baselineOnly": baseline_only,
            "comparisonOnly": comparison_only,
        },
        "scenarios": {
            "shared": len(shared),
            "baselineOnly": len(used_a - used_b),
            "comparisonOnly": len(used_b - used_a),
        },
        "perModel": per_model,
        "values": per_value,
        "divergedScenarios": _diverged(shared_models, shared, names, a, b),
        "samples": {
            "baseline": None if baseline.sample is None else baseline.sample.to_dict(),
            "comparison": None if comparison.sample is None else comparison.sample.to_dict(),
            "pairedPopulation": population,
        },
        "methodsUsed": {
            "pairing": "scenario_id",
            "deltaInterval": INTERVAL_METHOD,
            "finitePopulationCorrection": None,
            "scenarioPopulation": POPULATION_HOW,
            "decisionTest": "wilcoxon_signed_rank",
            "changedDecisions": "mcnemar_or_stuart_maxwell",
            "mcnemar": "exact_binomial_below_25_discordant_else_chi2_uncorrected",
            "valueTest": "paired_permutation (exact when 2^n <= draws)",
            "effectSize": "paired_cohens_dz_and_rank_biserial",
            "valueEffectSize": "cohens_h",
            "correction": correction,
            "correctedAcross": "every test of the comparison that can reject (canReject): "
            "tests where nothing differs between the runs have p = 1 by construction and are "
            "left out of the family",
            "testsInFamily": sum(p is not None for p in family),
            "testsLeftOut": left_out,
            "bootstrapDraws": bootstrap,
            "alpha": alpha,
            "seed": seed,
            "codeVersion": CODE_VERSION,
        },
        "warnings": dump(warnings),
        "computedAt": datetime.now(UTC).isoformat(),
    }
    cleaned: dict[str, Any] = clean(result)
    cleaned["durationMs"] = round((time.perf_counter() - started) * 1000, 3)
    return cleaned
