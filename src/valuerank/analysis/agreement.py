"""How far models agree: pairwise Spearman with Holm's correction, paired effect sizes,
outlier models, weighted Cohen's κ and Krippendorff's α.

A model's score on a scenario is its mean decision over its decided samples (a cell of the
model × scenario matrix). A pair is compared over the scenarios *both* decided — not only
those every model decided, as the original worker did, which threw away data whenever one
model refused. Beside ρ, a pair's `meanDifference` (model1 − model2) and its size, the paired
Cohen's d_z = mean(a − b) / sd(a − b) (`meanDifferenceDz`; the scores are paired by scenario;
the original's pooled two-sample d ignored that). It measures how far apart the two models sit
on the scale, not how far they agree: it was called `effectSize`, and "0.05, negligible"
beside ρ = −0.88 read as agreement.
"""

from __future__ import annotations

import math
from itertools import combinations
from typing import Any

import numpy as np

from valuerank.analysis.correlation import MIN_SHARED, spearman
from valuerank.analysis.data import CODES, FloatArray
from valuerank.analysis.intervals import adjust, interpret_d
from valuerank.analysis.output import pair_key
from valuerank.analysis.warning import AnalysisWarning

OUTLIER_Z = 3.5  # Iglewicz & Hoaglin's cut-off for the modified z-score
MIN_MODELS_FOR_OUTLIERS = 4


def paired_dz(a: FloatArray, b: FloatArray) -> float | None:
    """Cohen's d_z of paired scores: mean difference over the sd of the differences;
    0 when every difference is 0, None when it is undefined (n < 2, or sd 0 with a shift)."""
    if a.size < 2:
        return None
    diff = a - b
    sd = float(diff.std(ddof=1))
    mean = float(diff.mean())
    if sd == 0:
        return 0.0 if mean == 0 else None
    return mean / sd


def pairwise(
    models: tuple[str, ...], cells: FloatArray, alpha: float = 0.05
) -> tuple[dict[str, Any], list[AnalysisWarning]]:
    """`modelAgreement.pairwise`: one entry per pair, keyed `"a:b"` with a < b."""
    raw: list[dict[str, Any]] = []
    warnings: list[AnalysisWarning] = []
    decided = ~np.isnan(cells)
    for i, j in combinations(range(len(models)), 2):
        shared = decided[i] & decided[j]
        a, b = cells[i, shared], cells[j, shared]
        rho, p = spearman(a, b)
        dz = paired_dz(a, b)
        first, second = sorted((models[i], models[j]))
        sign = 1.0 if first == models[i] else -1.0
        raw.append(
            {
                "model1": first,
                "model2": second,
                "n": int(shared.sum()),
                "spearmanRho": rho,
                "pValue": p,
                # How far apart the pair's decisions sit (model1 − model2), not how far they
                # agree: ρ says that ("d_z 0.05, negligible" beside ρ = −0.88 read as agreement).
                "meanDifference": None if not a.size else sign * float((a - b).mean()),
                "meanDifferenceDz": None if dz is None else sign * dz,
                "meanDifferenceSize": interpret_d(dz),
            }
        )
        if rho is None:
            why = (
                f"only {int(shared.sum())} scenarios both decided"
                if shared.sum() < MIN_SHARED
                else "one of them gave the same score on every shared scenario"
            )
            warnings.append(
                AnalysisWarning(
                    "UNDEFINED_CORRELATION",
                    f"No Spearman correlation for {first} and {second}: {why}",
                    "The pair's spearmanRho and pValue are null and left out of the correction",
                )
            )
    corrected, significant = adjust([r["pValue"] for r in raw], "holm", alpha)
    result = {}
    for entry, p_adj, sig in zip(raw, corrected, significant, strict=True):
        entry["pValueCorrected"] = p_adj
        entry["significant"] = sig
        result[pair_key(entry["model1"], entry["model2"])] = entry
    return result, warnings


def mean_agreement(models: tuple[str, ...], pairs: dict[str, Any]) -> dict[str, float]:
    """Each model's mean ρ with the others (pairs with a defined ρ only)."""
    found: dict[str, list[float]] = {m: [] for m in models}
    for entry in pairs.values():
        if entry["spearmanRho"] is not None:
            found[entry["model1"]].append(entry["spearmanRho"])
            found[entry["model2"]].append(entry["spearmanRho"])
    return {m: float(np.mean(v)) for m, v in found.items() if v}


def modified_z(values: FloatArray) -> FloatArray:
    """Iglewicz & Hoaglin's modified z-scores, 0.6745 (x − median) / MAD; when the MAD is 0,
    (x − median) / (1.253314 · mean absolute deviation); all 0 when both are 0."""
    median = float(np.median(values))
    deviation = values - median
    mad = float(np.median(np.abs(deviation)))
    if mad > 0:
        return 0.6745 * deviation / mad
    mean_ad = float(np.mean(np.abs(deviation)))
    if mean_ad > 0:
        return deviation / (1.253314 * mean_ad)
    return np.zeros_like(values)


def outlier_models(means: dict[str, float]) -> list[str]:
    """Models whose mean agreement with the others is unusually *low*: modified z-score
    below −3.5 over the models' mean ρ (needs at least four models). The original worker's
    z > 2 with the sample sd could never fire with fewer than six models."""
    if len(means) < MIN_MODELS_FOR_OUTLIERS:
        return []
    names = sorted(means)
    z = modified_z(np.array([means[m] for m in names]))
    return [m for m, score in zip(names, z.tolist(), strict=True) if score < -OUTLIER_Z]


def model_agreement(
    models: tuple[str, ...], cells: FloatArray, alpha: float = 0.05
) -> tuple[dict[str, Any], list[AnalysisWarning]]:
    """The `modelAgreement` section: pairwise, outlierModels, overallAgreement (mean ρ over
    the pairs with a defined ρ; None when there is none)."""
    pairs, warnings = pairwise(models, cells, alpha)
    rhos = [p["spearmanRho"] for p in pairs.values() if p["spearmanRho"] is not None]
    means = mean_agreement(models, pairs)
    return {
        "pairwise": pairs,
        "outlierModels": outlier_models(means),
        "overallAgreement": float(np.mean(rhos)) if rhos else None,
        "meanAgreement": means,
    }, warnings


def code_weights(cells: FloatArray) -> FloatArray:
    """(…, codes): each cell's mean decision as weights over the codes 1–5 (κ, α and the
    comparison's changed decisions, paired.py, read a mean as codes this way). The nearest code
    gets weight 1; a mean exactly halfway between two codes (27 % of the cells of a judged
    run with two samples) gives ½ to each instead of rounding half up, which moved κ by 0.03.
    A cell without decisions has all weights 0."""
    lower = np.floor(cells)
    tie = np.isclose(cells - lower, 0.5)
    nearest = np.where(tie, lower, np.floor(cells + 0.5))
    weights = np.zeros((*cells.shape, CODES.size))
    for k, code in enumerate(CODES.tolist()):
        weights[..., k] = np.where(tie, 0.5 * ((lower == code) | (lower + 1 == code)), 0.0)
        weights[..., k] += np.where(~tie & (nearest == code), 1.0, 0.0)
    return weights


def _as_weights(codes: FloatArray) -> FloatArray:
    """Integer codes (1-D, NaN allowed) as one-hot weights; weights pass through."""
    return code_weights(codes) if codes.ndim == 1 else codes


def weighted_kappa(a: FloatArray, b: FloatArray) -> float | None:
    """Cohen's κ with quadratic weights over the codes 1–5, from scikit-learn with a
    scenario's joint weight (the product of the two models' code weights, `code_weights`)
    as the sample weight; `a`, `b` are codes (n,) or code weights (n, 5) of the scenarios
    both decided. None when undefined (fewer than two scenarios, or one code only)."""
    wa, wb = _as_weights(a), _as_weights(b)
    if wa.shape[0] < 2:
        return None
    joint = np.einsum("nc,nk->ck", wa, wb)
    if np.count_nonzero(joint.sum(axis=0) + joint.sum(axis=1)) < 2:
        return None
    # Here, not with the module: scikit-learn takes seconds of CPU to import, and a run of
    # one model (every analysis loads this module) never compares two.
    from sklearn.metrics import cohen_kappa_score

    first, second = np.nonzero(joint)
    kappa = cohen_kappa_score(
        CODES[first],
        CODES[second],
        labels=CODES.tolist(),
        weights="quadratic",
        sample_weight=joint[first, second],
    )
    return float(kappa) if math.isfinite(kappa) else None


def krippendorff_alpha(codes: FloatArray) -> float | None:
    """Krippendorff's α, ordinal, over all models (coders) × scenarios (units) with missing
    cells; `codes` are codes (coders, units) with NaN, or code weights (coders, units, 5).
    None when undefined (fewer than two coders, no unit coded twice, no variation).

    Computed from the coincidence matrix (Krippendorff 2011): a halfway cell's ½ + ½ enter
    it as the expected coincidences of a fair coin tossed for each such cell. The
    `krippendorff` package cannot take such weights (its value counts assume whole
    values), so the tests check this against it on whole codes and on the coin tosses
    enumerated."""
    weights = code_weights(codes) if codes.ndim == 2 else codes
    coders = weights.sum(axis=2)  # 1 where a coder coded the unit
    pairable = coders.sum(axis=0) >= 2
    if weights.shape[0] < 2 or not pairable.any():
        return None
    w = weights[:, pairable]
    m = coders[:, pairable].sum(axis=0)
    totals = w.sum(axis=0)  # (units, codes)
    same_coder = np.einsum("iuc,iuk->uck", w, w)
    coincidences = np.einsum("uc,uk->uck", totals, totals) - same_coder
    o = (coincidences / (m - 1)[:, None, None]).sum(axis=0)
    n_c = o.sum(axis=1)
    if np.count_nonzero(n_c > 1e-12) < 2:
        return None
    # Ordinal metric: (the frequencies from code c to code k, halving both ends)².
    cumulative = np.concatenate([[0.0], np.cumsum(n_c)])
    index = np.arange(n_c.size)
    lo, hi = np.minimum.outer(index, index), np.maximum.outer(index, index)
    delta = (cumulative[hi + 1] - cumulative[lo] - (n_c[:, None] + n_c[None, :]) / 2) ** 2
    n = n_c.sum()
    expected = float((np.outer(n_c, n_c) * delta).sum())
    if expected == 0:
        return None
    value = 1 - (n - 1) * float((o * delta).sum()) / expected
    return float(value) if math.isfinite(value) else None
