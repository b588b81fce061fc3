"""The report's tables as rows, read from the stored analysis JSON (and a comparison's): pure.

Nothing is recomputed here: every number comes from `valuerank analyze --json` (or
`valuerank compare --json`) as stored, so the report and those commands cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from valuerank.analysis.sensitivity_words import sentence

# How each figure was computed, in words, and the `methodsUsed` keys that name the exact
# method: the words stay general, the analysis JSON says what its code did.
HOW: dict[str, tuple[str, tuple[str, ...]]] = {
    "sensitivity": (
        "Per model, one least-squares fit of the decision code on every dimension's level "
        "score: the coefficient is how many points of the scale the expected decision moves "
        "for a one-level stronger stake, the others held fixed. Intervals and p-values are "
        "cluster-robust by scenario (a scenario's samples are not independent). From the "
        "decisions alone: no judge needed.",
        ("valueSensitivity",),
    ),
    "win_rates": (
        "Win rate = prioritised / (prioritised + deprioritised) over the judged transcripts "
        "(neutral excluded; 0.5 with the interval [0, 1] when a value was never at stake), "
        "with a 95 % score interval. 0.5 means as often won as lost.",
        ("winRateCI", "winRateCILibrary", "finitePopulationCorrection"),
    ),
    "judges": (
        "Per value, each reading puts the value in one of three categories (prioritised, "
        "deprioritised, neither). Krippendorff's alpha (nominal) and, when every transcript "
        "was read by as many judges, Fleiss' kappa measure how far the judge models agree; "
        "each judge is compared with the judges' consensus and with the people who read "
        "transcripts (share of agreement and Cohen's kappa). 95 % intervals resample "
        "scenarios.",
        ("judgeAgreement",),
    ),
    "decisions": (
        "Counts of each decision code over the decided transcripts (refusals and unparseable "
        "answers are counted apart), and each model's mean decision with its 95 % interval.",
        ("meanCI",),
    ),
    "agreement": (
        "Rank correlation between two models over the scenarios both decided (a model's score "
        "on a scenario is its mean decision there), p-values corrected across the pairs, and "
        "how far apart they sit: the mean difference and its paired effect size (not agreement).",
        ("modelComparison", "pValueCorrection", "meanDifferenceEffectSize", "outlierModels"),
    ),
    "dimensions": (
        "A test of the decisions across each dimension's levels and the share of the "
        "decisions' variance the dimension explains, p-values corrected across dimensions.",
        ("dimensionTest", "dimensionEffectSize", "pValueCorrection"),
    ),
    "comparison": (
        "Each model's scores are paired on scenario identity over the scenarios both runs "
        "decided. Δ = this run's mean decision − the baseline's, with a paired bootstrap 95 % "
        "interval, a signed-rank test of the shift and a test of changed decision codes; every "
        "p-value of the comparison is corrected together.",
        ("deltaInterval", "decisionTest", "changedDecisions", "correction", "bootstrapDraws"),
    ),
}


def how(used: Mapping[str, Any], name: str) -> dict[str, Any]:
    """A figure's explanation and the methods the analysis recorded for it."""
    text, keys = HOW[name]
    recorded = [(key, str(used[key])) for key in keys if used.get(key) is not None]
    return {"text": text, "recorded": recorded}


@dataclass(frozen=True)
class Caveat:
    code: str
    message: str
    recommendation: str


def ordered(mapping: Mapping[str, Any], order: Any) -> list[tuple[str, Any]]:
    """`mapping`'s items in the order of the list `order` (the run's models or dimensions as
    `meta` lists them), then any others: a JSON object's key order does not survive every
    database (PostgreSQL's jsonb sorts keys), a list's does."""
    first = [key for key in order or () if key in mapping]
    return [(key, mapping[key]) for key in [*first, *(k for k in mapping if k not in first)]]


def _models(basic: Mapping[str, Any]) -> list[str]:
    return list((basic.get("meta") or {}).get("models") or [])


def judged(basic: Mapping[str, Any]) -> bool:
    """Whether any transcript carries the judges' consensus (win rates need it)."""
    return bool((basic.get("meta") or {}).get("judged"))


def sample_basis(basic: Mapping[str, Any]) -> str:
    """The sentence every figure of the run rests on."""
    sample = basic.get("sample")
    if sample and sample.get("basis"):
        return str(sample["basis"])
    meta = basic.get("meta") or {}
    return (
        f"based on the {meta.get('scenarios', 0)} scenarios the run answered "
        "(the number the definition has was not recorded)"
    )


def sensitivity_rows(basic: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per model and dimension, with the finding in words; `excludes_zero` when the
    95 % interval excludes no effect. (Not `clear`: templates would find dict.clear.)"""
    labels = basic.get("scaleLabels")
    dimensions = (basic.get("meta") or {}).get("dimensions")
    rows = []
    for model, dims in ordered(basic.get("valueSensitivity") or {}, _models(basic)):
        for dim, entry in ordered(dims, dimensions):
            ci = entry.get("ci95")
            rows.append(
                {
                    "model": model,
                    "dimension": dim,
                    "value": entry.get("value", dim),
                    "coefficient": entry.get("coefficient"),
                    "ci": ci,
                    "pValue": entry.get("pValue"),
                    "n": entry.get("n"),
                    "status": str(entry.get("status", "ok")).replace("_", " "),
                    "text": sentence(model, dict(entry), labels),
                    "excludes_zero": bool(ci) and (ci[0] > 0 or ci[1] < 0),
                }
            )
    return rows


def by_model(rows: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """Rows grouped by their model, in the models' order."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(str(row["model"]), []).append(row)
    return list(groups.items())


def win_rate_rows(basic: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per model and value (empty when nothing was judged)."""
    if not judged(basic):
        return []
    rows = []
    values = (basic.get("meta") or {}).get("values")
    for model, stats in ordered(basic.get("perModel") or {}, _models(basic)):
        for value, entry in ordered(stats.get("values") or {}, values):
            count = entry.get("count") or {}
            rows.append(
                {
                    "model": model,
                    "value": value,
                    "winRate": entry.get("winRate"),
                    "lower": (entry.get("confidenceInterval") or {}).get("lower"),
                    "upper": (entry.get("confidenceInterval") or {}).get("upper"),
                    "prioritized": count.get("prioritized", 0),
                    "deprioritized": count.get("deprioritized", 0),
                    "neutral": count.get("neutral", 0),
                }
            )
    return rows


def scale_codes(basic: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The decision codes with their labels (the definition's scale; empty label unknown)."""
    labels = basic.get("scaleLabels") or {}
    distribution = (basic.get("visualizationData") or {}).get("decisionDistribution") or {}
    codes = {code for counts in distribution.values() for code in counts} | set(labels)
    return [(code, str(labels.get(code, ""))) for code in sorted(codes, key=int)]


def decision_rows(basic: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per model: transcripts, decided, refusals, the mean with its interval and the
    count of every decision code."""
    distribution = (basic.get("visualizationData") or {}).get("decisionDistribution") or {}
    codes = [code for code, _ in scale_codes(basic)]
    rows = []
    for model, stats in ordered(basic.get("perModel") or {}, _models(basic)):
        overall = stats.get("overall") or {}
        ci = overall.get("confidenceInterval") or {}
        counts = distribution.get(model) or {}
        rows.append(
            {
                "model": model,
                "sampleSize": stats.get("sampleSize"),
                "decided": stats.get("decided"),
                "refusals": stats.get("refusals"),
                "unparseable": stats.get("unparseable"),
                "mean": overall.get("mean"),
                "lower": ci.get("lower"),
                "upper": ci.get("upper"),
                "counts": [(code, int(counts.get(code, 0))) for code in codes],
            }
        )
    return rows


def agreement_rows(basic: Mapping[str, Any]) -> list[dict[str, Any]]:
    pairs = (basic.get("modelAgreement") or {}).get("pairwise") or {}
    return [dict(entry) for _, entry in sorted(pairs.items())]


def dimension_rows(basic: Mapping[str, Any]) -> list[dict[str, Any]]:
    dims = (basic.get("dimensionAnalysis") or {}).get("dimensions") or {}
    order = (basic.get("meta") or {}).get("dimensions")
    return [{"dimension": name, **entry} for name, entry in ordered(dims, order)]


def comparison_rows(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per shared model: both means, Δ with its interval, the tests (corrected p-values)."""
    rows = []
    shared = (result.get("models") or {}).get("shared")
    for model, entry in ordered(result.get("perModel") or {}, shared):
        interval = entry.get("interval") or {}
        changed = entry.get("changedDecisions") or {}
        wilcoxon = entry.get("wilcoxon") or {}
        rows.append(
            {
                "model": model,
                "n": entry.get("n"),
                "baselineMean": entry.get("baselineMean"),
                "comparisonMean": entry.get("comparisonMean"),
                "delta": entry.get("delta"),
                "lower": interval.get("lower"),
                "upper": interval.get("upper"),
                "pValue": wilcoxon.get("pValueCorrected"),
                "significant": bool(wilcoxon.get("significant")),
                "changed": changed.get("changed"),
                "changedP": changed.get("pValueCorrected"),
                "changedSignificant": bool(changed.get("significant")),
                "dz": (entry.get("effectSize") or {}).get("dz"),
            }
        )
    return rows


def value_delta_rows(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per shared model and value: both win rates, Δ with its interval, corrected p."""
    rows = []
    shared = (result.get("models") or {}).get("shared")
    for model, values in ordered(result.get("values") or {}, shared):
        for value, entry in sorted(values.items()):
            interval = entry.get("interval") or {}
            rows.append(
                {
                    "model": model,
                    "value": value,
                    "n": entry.get("n"),
                    "baseline": entry.get("baselineWinRate"),
                    "comparison": entry.get("comparisonWinRate"),
                    "delta": entry.get("delta"),
                    "lower": interval.get("lower"),
                    "upper": interval.get("upper"),
                    "pValue": entry.get("pValueCorrected"),
                    "significant": bool(entry.get("significant")),
                }
            )
    return rows


SYNTHETIC = Caveat(
    "SYNTHETIC_MODELS",
    "Some models of this run are scripted (provider `scripted`): their answers follow fixed "
    "rules, not a real model's judgement",
    "Read the figures as a demonstration of the method, not as findings about AI models",
)


def caveats(
    basic: Mapping[str, Any], *, synthetic: bool, comparison: Mapping[str, Any] | None
) -> list[Caveat]:
    """What a reader must know before quoting a figure: the sample basis, scripted models,
    and every warning of the analysis (and of the comparison)."""
    found = [Caveat("SAMPLE_BASIS", f"Every figure is {sample_basis(basic)}", "")]
    if synthetic:
        found.append(SYNTHETIC)
    warnings = list(basic.get("warnings") or [])
    if comparison is not None:
        warnings += comparison.get("warnings") or []
    seen: set[tuple[str, str]] = set()
    for w in warnings:
        key = (str(w.get("code")), str(w.get("message")))
        if key not in seen:
            seen.add(key)
            found.append(Caveat(key[0], key[1], str(w.get("recommendation") or "")))
    return found


def _described(value: Any) -> str:
    """A method's description; a group of them (`robustness: {orderEffect: …}`) one per
    part, `name: description; …`."""
    if isinstance(value, Mapping):
        return "; ".join(f"{k}: {v}" for k, v in value.items())
    return str(value)


def methods(used: Mapping[str, Any]) -> tuple[list[tuple[str, str]], list[str]]:
    """`methodsUsed` as (name, description) pairs and the list of deliberate variants."""
    pairs = [
        (key, "–" if value is None else _described(value))
        for key, value in sorted(used.items())
        if key != "variants"
    ]
    return pairs, [str(v) for v in used.get("variants") or []]
