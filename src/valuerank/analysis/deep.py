"""`analyze:deep`: the heavy statistics, under `analysis.deep`.

PCA and outliers (structure.py), correlations of each dimension with the decision per model
(dimensions.py), inter-model agreement — pairwise Spearman and quadratic-weighted Cohen's κ,
Krippendorff's α (ordinal) over all models with missing cells; a cell whose mean decision
is halfway between two codes counts half for each (agreement.py) —, Bradley–Terry value
strengths with cluster-robust intervals and separated values reported as such (values.py),
the most contested scenarios, and insights in words, none from a figure that is degenerate
by construction (insights.py). The optional narrative is written later by a
model (the `summarize` job) and stored next to these figures. A sampled run's deep section
states its basis (`sample`, SAMPLED_RUN); its correlation and Bradley–Terry intervals carry no
finite-population correction (one figure per scenario, or judgments pooled over scenarios,
cannot separate the scenarios' spread from the models' own variance): the scenarios count as
a sample of an unbounded population (`methodsUsed.scenarioPopulation`).
`bootstrap` is accepted for callers: nothing here is bootstrapped any more.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from itertools import combinations
from typing import Any

import numpy as np

from valuerank.analysis.agreement import (
    code_weights,
    krippendorff_alpha,
    pairwise,
    weighted_kappa,
)
from valuerank.analysis.data import AnalysisInput, FloatArray
from valuerank.analysis.dimensions import correlations
from valuerank.analysis.insights import insights_and_warnings
from valuerank.analysis.output import clean, pair_key
from valuerank.analysis.profile import contested
from valuerank.analysis.sampling import basis_warnings
from valuerank.analysis.structure import outliers, pca
from valuerank.analysis.values import BOOTSTRAP, METHOD, bradley_terry
from valuerank.analysis.version import CODE_VERSION
from valuerank.analysis.warning import AnalysisWarning
from valuerank.shapes import dump

DEEP_CONTESTED = 10
SCENARIO_POPULATION = (
    "no finite-population correction: correlations and Bradley-Terry strengths cannot separate "
    "the scenarios' spread from the models' own variance, which persists when every scenario "
    "is run, so the scenarios count as a sample of an unbounded population (conservative; "
    "expanding a run never widens these intervals in expectation)"
)


def deep_agreement(
    models: tuple[str, ...], cells: FloatArray, alpha: float
) -> tuple[dict[str, Any], list[AnalysisWarning]]:
    pairs, warnings = pairwise(models, cells, alpha)
    weights = code_weights(cells)
    decided = ~np.isnan(cells)
    for i, j in combinations(range(len(models)), 2):
        shared = decided[i] & decided[j]
        entry = pairs[pair_key(models[i], models[j])]
        entry["weightedKappa"] = weighted_kappa(weights[i, shared], weights[j, shared])
    alpha_value = krippendorff_alpha(weights)
    if alpha_value is None and len(models) > 1:
        warnings.append(
            AnalysisWarning(
                "UNDEFINED_KRIPPENDORFF_ALPHA",
                "Krippendorff's alpha is undefined: no scenario was decided by two models, "
                "or every decision is the same",
                "It is reported as null",
            )
        )
    return {
        "pairwise": pairs,
        "krippendorffAlpha": {
            "value": alpha_value,
            "level": "ordinal",
            "coders": len(models),
            "units": int((decided.sum(axis=0) >= 2).sum()),
        },
    }, warnings


def analyze_deep(
    data: AnalysisInput,
    *,
    basic: dict[str, Any] | None = None,
    alpha: float = 0.05,
    bootstrap: int = BOOTSTRAP,
    now: datetime | None = None,
) -> dict[str, Any]:
    """The deep analysis of `data` (strict-JSON-ready); `basic` feeds the insights."""
    started = time.perf_counter()
    cells = data.cell_means()
    agreement, warnings = deep_agreement(data.models, cells, alpha)
    strengths, bt_warnings = bradley_terry(data)
    deep: dict[str, Any] = {
        "pca": pca(data.models, data.scenarios, cells),
        "outliers": outliers(data.models, cells),
        "correlations": correlations(data),
        "agreement": agreement,
        "bradleyTerry": strengths,
        "mostContestedScenarios": contested(data, cells, DEEP_CONTESTED),
        "methodsUsed": {
            "pca": "sklearn_pca_standardised_per_scenario_mean_imputed",
            "mahalanobis": "minimum_covariance_determinant_chi2_0.975",
            "isolationForest": "sklearn_isolation_forest_auto",
            "jackknife": "rms_consensus_shift_modified_z_3.5",
            "correlation": "pearson_spearman_fisher_z_bonett_wright",
            "correlationLibrary": "scipy.stats.pearsonr (r, p, interval), spearmanr (rho, p)",
            "kappa": "cohen_quadratic_weights",
            "krippendorff": "ordinal",
            "decisionCodes": "a cell's mean decision rounded to the nearest code; a mean "
            "halfway between two codes counts half for each (no rounding half up)",
            "bradleyTerry": METHOD,
            "bradleyTerrySeparation": "strengths on the largest strongly connected set of "
            "values; the others are separated: strength and interval null, `direction` "
            "above/below/null",
            "bootstrapDraws": None,
            "finitePopulationCorrection": None,
            "scenarioPopulation": SCENARIO_POPULATION,
            "alpha": alpha,
            "codeVersion": CODE_VERSION,
        },
        "narrative": None,
        "sample": None if data.sample is None else data.sample.to_dict(),
    }
    cleaned: dict[str, Any] = clean(deep)
    cleaned["insights"], insight_warnings = insights_and_warnings(basic, cleaned)
    found = (*basis_warnings(data.sample), *warnings, *bt_warnings, *insight_warnings)
    cleaned["warnings"] = dump(found)
    cleaned["computedAt"] = (now or datetime.now(UTC)).isoformat()
    cleaned["durationMs"] = round((time.perf_counter() - started) * 1000, 3)
    return cleaned
