"""`analyze:compare`: two runs paired on scenario identity, with significance.

For every model both runs have, its scores (mean decision per scenario) are paired over the
scenarios both runs decided:
- the decision delta (comparison − baseline) with a paired percentile bootstrap interval
  (scenarios resampled with replacement), the Wilcoxon signed-rank test, the paired
  Cohen's d_z and the matched-pairs rank-biserial correlation;
- changed decisions: the table of (baseline code, comparison code); McNemar's test when
  only two codes occur, else the Stuart–Maxwell test of marginal homogeneity (statsmodels);
- per value, the win-rate delta with a paired bootstrap interval and a paired permutation
  test (each scenario's two sides swapped at random).
Every p-value of the comparison is corrected together (Benjamini–Hochberg by default, or
Holm). The scenarios where the models moved most are listed. Models only one run has are
named, not compared.
"""

from __future__ import annotations

import time
import warnings as pywarnings
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
from scipy import stats
from statsmodels.stats.contingency_tables import SquareTable, mcnemar

from valuerank.analysis.agreement import code_matrix, paired_dz
from valuerank.analysis.basic import CODE_VERSION
from valuerank.analysis.data import AnalysisInput, FloatArray
from valuerank.analysis.intervals import Correction, adjust, interpret_d
from valuerank.analysis.output import AnalysisWarning, clean

BOOTSTRAP = 1000
PERMUTATIONS = 1000
SEED = 20240612
DIVERGED_LIMIT = 10
SMALL_PAIRED = 10
LEVEL = 0.95


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


def _bootstrap_weights(n: int, draws: int, rng: np.random.Generator) -> FloatArray:
    """(draws, n) multinomial counts: how often each pair is in each resample."""
    return rng.multinomial(n, np.full(n, 1 / n), size=draws).astype(float)


def _percentile(draws: FloatArray) -> tuple[float, float]:
    tail = (1 - LEVEL) / 2 * 100
    return float(np.percentile(draws, tail)), float(np.percentile(draws, 100 - tail))


def rank_biserial(diff: FloatArray) -> float | None:
    """Matched-pairs rank-biserial correlation (W+ − W−)/(W+ + W−) over non-zero
    differences (Kerby 2014); 0 when every difference is 0, None without pairs."""
    if diff.size == 0:
        return None
    nonzero = diff[diff != 0]
    if nonzero.size == 0:
        return 0.0
    ranks = stats.rankdata(np.abs(nonzero))
    plus, minus = float(ranks[nonzero > 0].sum()), float(ranks[nonzero < 0].sum())
    return (plus - minus) / (plus + minus)


def wilcoxon(diff: FloatArray) -> tuple[float | None, float | None]:
    """Wilcoxon signed-rank (statistic, two-sided p); (0, 1) when nothing moved."""
    if diff.size == 0:
        return None, None
    if np.all(diff == 0):
        return 0.0, 1.0
    result = stats.wilcoxon(diff, zero_method="wilcox", alternative="two-sided")
    return float(result.statistic), float(result.pvalue)


def changed_decisions(a: FloatArray, b: FloatArray) -> dict[str, Any]:
    """How many paired decision codes changed, and the test of marginal homogeneity."""
    changed = int((a != b).sum())
    base: dict[str, Any] = {
        "n": int(a.size),
        "changed": changed,
        "share": changed / a.size if a.size else None,
    }
    present = np.unique(np.concatenate([a, b])).astype(int)
    if a.size == 0 or changed == 0:
        none = {"test": None, "statistic": None, "df": None}
        return {**base, **none, "pValue": 1.0 if a.size else None}
    table = np.zeros((present.size, present.size))
    np.add.at(table, (np.searchsorted(present, a), np.searchsorted(present, b)), 1)
    # Codes nobody moved to or from add nothing to the statistic but make its covariance
    # singular: test over the codes with discordant pairs.
    moved = table.sum(axis=0) + table.sum(axis=1) - 2 * np.diag(table) > 0
    table = table[np.ix_(moved, moved)]
    if table.shape[0] == 2:
        discordant = table[0, 1] + table[1, 0]
        result = mcnemar(table, exact=discordant < 25, correction=False)
        test, df = ("mcnemar_exact" if discordant < 25 else "mcnemar"), 1
    else:
        with pywarnings.catch_warnings():
            pywarnings.simplefilter("ignore")  # a singular covariance gives NaN: None below
            result = SquareTable(table, shift_zeros=False).homogeneity()
        test, df = "stuart_maxwell", int(result.df)
    p = float(result.pvalue)
    return {
        **base,
        "test": test,
        "statistic": float(result.statistic),
        "df": df,
        "pValue": p if np.isfinite(p) else None,
    }


def _decision_delta(
    a: FloatArray, b: FloatArray, rng: np.random.Generator, draws: int
) -> dict[str, Any]:
    pairs = ~np.isnan(a) & ~np.isnan(b)
    x, y = a[pairs], b[pairs]
    diff = y - x
    n = int(diff.size)
    if n == 0:
        return {"n": 0, "baselineMean": None, "comparisonMean": None, "delta": None,
                "interval": None, "wilcoxon": {"statistic": None, "pValue": None},
                "effectSize": {"dz": None, "rankBiserial": None, "interpretation": "undefined"},
                "changedDecisions": changed_decisions(x, y)}  # fmt: skip
    boot = _bootstrap_weights(n, draws, rng) @ diff / n
    statistic, p = wilcoxon(diff)
    dz = paired_dz(y, x)
    return {
        "n": n,
        "baselineMean": float(x.mean()),
        "comparisonMean": float(y.mean()),
        "delta": float(diff.mean()),
        "interval": {
            "lower": _percentile(boot)[0],
            "upper": _percentile(boot)[1],
            "level": LEVEL,
            "method": "paired_bootstrap_percentile",
        },
        "wilcoxon": {"statistic": statistic, "pValue": p},
        "effectSize": {
            "dz": dz,
            "rankBiserial": rank_biserial(diff),
            "interpretation": interpret_d(dz),
        },
        "changedDecisions": changed_decisions(code_matrix(x), code_matrix(y)),
    }


def _win(p: FloatArray, d: FloatArray) -> FloatArray:
    total = p + d
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, p / np.where(total > 0, total, 1), 0.5)


def _value_deltas(
    i: int, a: _Side, b: _Side, values: list[str], rng: np.random.Generator, draws: int
) -> dict[str, Any]:
    pairs = (a.judged[i] > 0) & (b.judged[i] > 0)
    n = int(pairs.sum())
    if n == 0:
        return {}
    pa, da = a.prioritized[i, pairs], a.deprioritized[i, pairs]  # (n, values)
    pb, db = b.prioritized[i, pairs], b.deprioritized[i, pairs]
    observed = _win(pb.sum(0), db.sum(0)) - _win(pa.sum(0), da.sum(0))
    weights = _bootstrap_weights(n, draws, rng)
    boot = _win(weights @ pb, weights @ db) - _win(weights @ pa, weights @ da)
    flips = rng.integers(0, 2, size=(draws, n)).astype(float)
    keep = 1 - flips
    perm = _win(keep @ pb + flips @ pa, keep @ db + flips @ da) - _win(
        keep @ pa + flips @ pb, keep @ da + flips @ db
    )
    extreme = (np.abs(perm) >= np.abs(observed) - 1e-12).sum(axis=0)
    p_values = (1 + extreme) / (1 + draws)
    result = {}
    for k, value in enumerate(values):
        involved = (pa[:, k] + da[:, k] + pb[:, k] + db[:, k]).sum()
        if involved == 0:
            continue
        lower, upper = _percentile(boot[:, k])
        result[value] = {
            "n": n,
            "baselineWinRate": float(_win(pa[:, k].sum(), da[:, k].sum())),
            "comparisonWinRate": float(_win(pb[:, k].sum(), db[:, k].sum())),
            "delta": float(observed[k]),
            "interval": {
                "lower": lower,
                "upper": upper,
                "level": LEVEL,
                "method": "paired_bootstrap_percentile",
            },
            "pValue": float(p_values[k]),
            "test": "paired_permutation",
        }
    return result


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
    rng = np.random.default_rng(seed)
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
    per_model: dict[str, Any] = {}
    per_value: dict[str, Any] = {}
    for i, model in enumerate(shared_models):
        per_model[model] = _decision_delta(a.cells[i], b.cells[i], rng, bootstrap)
        per_value[model] = _value_deltas(i, a, b, values, rng, bootstrap)
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
    corrected, rejected = adjust([p for _, p in tests], correction, alpha)
    for (target, _), p_adj, sig in zip(tests, corrected, rejected, strict=True):
        target["pValueCorrected"] = p_adj
        target["significant"] = sig
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
        },
        "methodsUsed": {
            "pairing": "scenario_id",
            "deltaInterval": "paired_bootstrap_percentile",
            "decisionTest": "wilcoxon_signed_rank",
            "changedDecisions": "mcnemar_or_stuart_maxwell",
            "valueTest": "paired_permutation",
            "effectSize": "paired_cohens_dz_and_rank_biserial",
            "correction": correction,
            "correctedAcross": "every test of the comparison",
            "bootstrapDraws": bootstrap,
            "alpha": alpha,
            "seed": seed,
            "codeVersion": CODE_VERSION,
        },
        "warnings": [w.to_dict() for w in warnings],
        "computedAt": datetime.now(UTC).isoformat(),
    }
    cleaned: dict[str, Any] = clean(result)
    cleaned["durationMs"] = round((time.perf_counter() - started) * 1000, 3)
    return cleaned
