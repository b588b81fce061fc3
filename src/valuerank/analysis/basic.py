"""`analyze:basic`: the fast findings of a run, in the original cloud worker's JSON shape.

Keys kept from the original `analyze_basic` (so tools written for it keep working):
`perModel`, `modelAgreement`, `dimensionAnalysis`, `mostContestedScenarios`,
`visualizationData`, `methodsUsed`, `warnings`, `computedAt`, `durationMs`. New material sits
under new keys (`meta`, `sample`) or new fields of existing entries; `methodsUsed.variants`
lists every place where the computation deliberately differs from the original.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import numpy as np

from valuerank.analysis.agreement import model_agreement
from valuerank.analysis.data import AnalysisInput
from valuerank.analysis.dimensions import dimension_analysis
from valuerank.analysis.judge_agreement import METHOD as JUDGE_AGREEMENT_METHOD
from valuerank.analysis.judge_agreement import judge_agreement
from valuerank.analysis.judged import judged_value_warnings
from valuerank.analysis.output import clean
from valuerank.analysis.profile import (
    contested,
    per_model,
    sample_warnings,
    verdict_warnings,
    visualization,
)
from valuerank.analysis.profile import mean_method as _mean_method
from valuerank.analysis.profile import win_rate_method as _win_rate_method
from valuerank.analysis.robustness import METHOD as ROBUSTNESS_METHOD
from valuerank.analysis.robustness import robustness
from valuerank.analysis.sampling import basis_warnings
from valuerank.analysis.sensitivity import METHOD as SENSITIVITY_METHOD
from valuerank.analysis.sensitivity import value_sensitivity
from valuerank.analysis.version import CODE_VERSION
from valuerank.analysis.warning import AnalysisWarning
from valuerank.shapes import dump

ALPHA = 0.05

VARIANTS = (
    "pair keys are the two model ids in sorted order, with model1/model2 fields",
    "Spearman per pair over the scenarios both models decided (pairwise complete)",
    "Holm-adjusted p-values are monotone (running maximum); computed in intervals.holm, not "
    "statsmodels' multipletests, which runs gc.collect() on every call (63 ms x 12 families "
    "per analysis, measured); the tests check it against multipletests",
    "effect size of a pair is the paired Cohen's d_z (scores are paired by scenario)",
    "overall.stdDev/mean/min/max are null, not 0, when undefined",
    "outlier models by modified z-score (median/MAD) of mean agreement, low side, >= 4 models",
    "dimension significance is Holm-corrected across dimensions",
    "the scenario is the unit: dimension tests, eta² and R² on scenario means (per model: "
    "the model's; pooled: the mean of the models'), intervals clustered by scenario",
    "varianceExplained is the R² of one OLS fit with every dimension categorical",
    "dimensions missing from some scenarios are reported per dimension (missing scenarios)",
    "refusal and unparseable rates per model",
    "finite population: the between-scenario variance weighs fpc², the within-scenario "
    "variance 1 - fpc² (two-stage), so expanding a run never widens an interval in expectation",
)


def fpc_how(data: AnalysisInput) -> str | None:
    """How the finite-population correction was applied, or None when it was not (no basis,
    or the population is unknown)."""
    sample = data.sample
    if sample is None or sample.between_weight >= 1:
        return None
    return (
        f"two-stage variance ({sample.basis}): between-scenario (clustered) variance times "
        f"fpc^2 = (N - n)/(N - 1) = {sample.between_weight:.6g} at the run's n (each "
        "figure's own n: the scenarios the model decided), plus the pooled "
        "within-scenario variance times 1 - fpc^2; t interval with Satterthwaite df, Wilson "
        "at Kish's effective size. Figures without repeated samples of a scenario cannot "
        "separate the two and use the clustered variance alone (their method lacks _fpc)"
    )


def methods_used(data: AnalysisInput, alpha: float) -> dict[str, Any]:
    return {
        "winRateCI": _win_rate_method(data),
        "winRateCILibrary": "statsmodels proportion_confint(method='wilson')",
        "meanCI": _mean_method(data),
        "unit": "scenario",
        "finitePopulationCorrection": fpc_how(data),
        "modelComparison": "spearman_rho",
        "correlationLibrary": "scipy.stats.spearmanr",
        "pValueCorrection": "holm",
        "pValueCorrectionImplementation": "intervals.holm (hand-written, see variants)",
        "meanDifferenceEffectSize": "paired_cohens_dz",
        "dimensionTest": "kruskal_wallis",
        "dimensionEffectSize": "eta_squared",
        "dimensionEffectSizeAdjusted": "epsilon_squared_kelley",
        "varianceExplained": "ols_r2_categorical",
        "varianceExplainedAdjusted": "adjusted_r2",
        "varianceExplainedByChance": "p_over_n_minus_1",
        "outlierModels": "modified_z_mad",
        "valueSensitivity": SENSITIVITY_METHOD,
        "judgeAgreement": JUDGE_AGREEMENT_METHOD,
        "robustness": ROBUSTNESS_METHOD,
        "contestedVariance": "population_ddof0_over_decided_transcripts",
        "alpha": alpha,
        "codeVersion": CODE_VERSION,
        "variants": list(VARIANTS),
    }


def input_warnings(data: AnalysisInput) -> list[AnalysisWarning]:
    """What the data itself lacks: transcripts, models, judgments, the full population."""
    found: list[AnalysisWarning] = []
    if data.n == 0:
        found.append(
            AnalysisWarning(
                "NO_TRANSCRIPTS",
                "The run has no transcripts",
                "Run the probes first; every section is empty",
            )
        )
        return found
    if len(data.models) == 1:
        found.append(
            AnalysisWarning(
                "SINGLE_MODEL",
                f"Only one model ({data.models[0]}) answered",
                "Model agreement needs two models: its sections are empty",
            )
        )
    if len(np.unique(data.scenario_idx)) == 1:
        found.append(
            AnalysisWarning(
                "SINGLE_SCENARIO",
                "All transcripts answer one scenario",
                "Agreement and dimension effects need several scenarios",
            )
        )
    judged = int(data.judged.sum())
    if judged == 0:
        found.append(
            AnalysisWarning(
                "NO_VALUE_JUDGMENTS",
                "No judge ran on this run: no transcript has prioritised/deprioritised values",
                "Value win rates need judges: judge the run's transcripts (the models are not "
                "asked again) with `valuerank runs judge RUN --judge MODEL` or the run page's "
                "Judge button (values are never inferred without them)",
            )
        )
    elif judged < data.n:
        found.append(
            AnalysisWarning(
                "PARTIAL_JUDGMENTS",
                f"Only {judged} of {data.n} transcripts have the judges' consensus",
                "Value win rates rest on the judged transcripts only",
            )
        )
    found.extend(basis_warnings(data.sample))
    return found


def analyze_basic(
    data: AnalysisInput, *, alpha: float = ALPHA, now: datetime | None = None
) -> dict[str, Any]:
    """The basic analysis of `data` as strict-JSON-ready data."""
    started = time.perf_counter()
    cells = data.cell_means()
    profile = per_model(data)
    agreement, agreement_warnings = model_agreement(data.models, cells, alpha)
    dimensions, dimension_warnings = dimension_analysis(data, alpha)
    sensitivity, sensitivity_warnings = value_sensitivity(data)
    robust, robustness_warnings = robustness(data)
    warnings = [
        *input_warnings(data),
        *judged_value_warnings(data),
        *verdict_warnings(data),
        *sample_warnings(data, profile),
        *agreement_warnings,
        *dimension_warnings,
        *sensitivity_warnings,
        *robustness_warnings,
    ]
    result = {
        # First: what moves each model, from the decisions alone (no judges needed).
        "valueSensitivity": sensitivity,
        # Next: how far those figures survive the wording and the scale's order.
        "robustness": robust,
        "scaleLabels": {str(code): text for code, text in sorted(data.scale_labels.items())},
        "perModel": profile,
        "modelAgreement": agreement,
        "dimensionAnalysis": dimensions,
        "mostContestedScenarios": contested(data, cells),
        "judgeAgreement": judge_agreement(data.readings),
        "visualizationData": visualization(data, cells),
        "methodsUsed": methods_used(data, alpha),
        "warnings": dump(warnings),
        "meta": {
            "transcripts": data.n,
            "decided": int(data.decided.sum()),
            "judged": int(data.judged.sum()),
            "models": list(data.models),
            "scenarios": len(np.unique(data.scenario_idx)) if data.n else 0,
            "dimensions": list(data.dimensions),
            "values": list(data.values),
        },
        "sample": None if data.sample is None else data.sample.to_dict(),
        "computedAt": (now or datetime.now(UTC)).isoformat(),
        "durationMs": 0,
    }
    cleaned: dict[str, Any] = clean(result)
    cleaned["durationMs"] = round((time.perf_counter() - started) * 1000, 3)
    return cleaned
