"""Insights in words: the findings a reader should see first, each with its figure.

Built only from computed figures (never from a model): significant agreements and
disagreements, the dimensions that drive decisions and in which direction, refusals, the
spread of the models (PCA), outliers, contested scenarios and the values each model puts
first. Every sentence states the number it rests on.

A figure that is what it is by construction says nothing about the models, so no sentence
is made of it; a warning says why instead: PC1 of a PCA with one component explains 100 %
(DEGENERATE_PCA), Krippendorff's α over fewer than three scenarios is set by those few
cells' own spread — one scenario where two models differ gives α = 0 (FEW_ALPHA_UNITS).
"""

from __future__ import annotations

from typing import Any

from valuerank.analysis.correlation import MIN_SHARED
from valuerank.analysis.warning import AnalysisWarning

KRIPPENDORFF_RELIABLE = 0.8  # Krippendorff (2004): α ≥ .800 reliable, ≥ .667 tentative
KRIPPENDORFF_TENTATIVE = 0.667
NOTABLE_REFUSAL = 0.2
NOTABLE_CORRELATION = 0.3
MIN_ALPHA_UNITS = MIN_SHARED  # the minimum the correlations beside α use


def _p(value: float | None) -> str:
    if value is None:
        return "p n/a"
    return "p < 0.001" if value < 0.001 else f"p = {value:.3f}"


def _agreement(basic: dict[str, Any]) -> list[str]:
    pairs = [
        p
        for p in basic["modelAgreement"]["pairwise"].values()
        if p["spearmanRho"] is not None and p["significant"]
    ]
    found = []
    if pairs:
        low = min(pairs, key=lambda p: p["spearmanRho"])
        high = max(pairs, key=lambda p: p["spearmanRho"])
        if low["spearmanRho"] < 0:
            found.append(
                f"{low['model1']} and {low['model2']} disagree: Spearman ρ = "
                f"{low['spearmanRho']:.2f} over {low['n']} scenarios "
                f"(Holm {_p(low['pValueCorrected'])})."
            )
        if high["spearmanRho"] > 0:
            found.append(
                f"{high['model1']} and {high['model2']} agree most: ρ = "
                f"{high['spearmanRho']:.2f} over {high['n']} scenarios "
                f"(Holm {_p(high['pValueCorrected'])})."
            )
    outliers = basic["modelAgreement"]["outlierModels"]
    if outliers:
        means = basic["modelAgreement"]["meanAgreement"]
        listed = ", ".join(f"{m} (ρ = {means[m]:.2f})" for m in outliers)
        found.append(
            f"Outlier models, whose mean agreement with the others is unusually low: {listed}."
        )
    return found


def _profile(basic: dict[str, Any]) -> list[str]:
    found = []
    for model, stats in basic["perModel"].items():
        rate = stats.get("refusalRate")
        if rate is not None and rate >= NOTABLE_REFUSAL:
            found.append(f"{model} refused {rate:.0%} of its {stats['sampleSize']} transcripts.")
    dims = basic["dimensionAnalysis"]["dimensions"]
    ranked = [(d, e) for d, e in dims.items() if e["rank"] == 1 and e["effectSize"] is not None]
    for dim, effect in ranked:
        verdict = "significant" if effect["significant"] else "not significant"
        found.append(
            f"{dim} moves the decisions most: η² = {effect['effectSize']:.2f} "
            f"(Kruskal–Wallis, Holm {_p(effect['pValueCorrected'])}, {verdict})."
        )
    if basic["mostContestedScenarios"]:
        top = basic["mostContestedScenarios"][0]
        found.append(
            f"The most contested scenario is {top['scenarioName']} "
            f"(variance {top['variance']:.2f} over {top['transcripts']} decided transcripts)."
        )
    return found


def _names(models: list[str], limit: int = 6) -> str:
    shown = ", ".join(models[:limit])
    return shown if len(models) <= limit else f"{shown} and {len(models) - limit} more"


def _drivers(deep: dict[str, Any]) -> list[str]:
    """Each model's strongest dimension (|ρ| ≥ 0.3), grouped by dimension and direction."""
    groups: dict[tuple[str, str], list[tuple[str, float]]] = {}
    for model, dims in deep["correlations"].items():
        best = max(
            ((d, e) for d, e in dims.items() if e["spearman"]["rho"] is not None),
            key=lambda item: abs(item[1]["spearman"]["rho"]),
            default=None,
        )
        if best is not None and abs(best[1]["spearman"]["rho"]) >= NOTABLE_CORRELATION:
            rho = best[1]["spearman"]["rho"]
            groups.setdefault((best[0], "up" if rho > 0 else "down"), []).append((model, rho))
    found = []
    for (dim, way), members in sorted(groups.items()):
        rhos = [r for _, r in members]
        spread = f"ρ = {rhos[0]:.2f}" if len(rhos) == 1 else f"ρ {min(rhos):.2f} to {max(rhos):.2f}"
        found.append(
            f"A higher {dim} pushes the decision {way} for "
            f"{_names([m for m, _ in members])} ({spread})."
        )
    return found


def _first_values(deep: dict[str, Any]) -> list[str]:
    """The value each model puts first (Bradley–Terry), grouped by value: the value separated
    above the others when there is one (its strength is infinite, so null), else the
    highest identified strength."""
    groups: dict[tuple[str, bool], list[str]] = {}
    for model, fit in deep["bradleyTerry"].items():
        if not fit or not fit["values"]:
            continue
        above = [v for v, e in fit["values"].items() if e.get("direction") == "above"]
        identified = [
            (v, e["strength"]) for v, e in fit["values"].items() if e["strength"] is not None
        ]
        if len(above) == 1:
            groups.setdefault((above[0], True), []).append(model)
        elif not above and identified:
            groups.setdefault((max(identified, key=lambda item: item[1])[0], False), []).append(
                model
            )
    return [
        f"{_names(models)} put{'s' if len(models) == 1 else ''} {value} first "
        + (
            "(it never lost to the other values: Bradley–Terry separation)."
            if separated
            else "(highest Bradley–Terry strength)."
        )
        for (value, separated), models in sorted(groups.items())
    ]


def _pca(pca: dict[str, Any]) -> tuple[list[str], list[AnalysisWarning]]:
    if not pca.get("available"):
        return [], []
    if pca["components"] < 2:
        return [], [
            AnalysisWarning(
                "DEGENERATE_PCA",
                f"PCA has one component ({len(pca['coordinates'])} models, "
                f"{pca['scenariosUsed']} scenarios on which they differ): it explains 100 % "
                "of the differences by construction",
                "No insight is drawn from it; compare at least three models",
            )
        ]
    first = pca["explainedVarianceRatio"][0]
    coords = {m: c[0] for m, c in pca["coordinates"].items()}
    lo, hi = min(coords, key=coords.__getitem__), max(coords, key=coords.__getitem__)
    return [
        f"The first principal component explains {first:.0%} of the differences between "
        f"models; {lo} and {hi} sit at its two ends."
    ], []


def _alpha(section: dict[str, Any]) -> tuple[list[str], list[AnalysisWarning]]:
    alpha = section["value"]
    if alpha is None:
        return [], []
    if section["units"] < MIN_ALPHA_UNITS:
        return [], [
            AnalysisWarning(
                "FEW_ALPHA_UNITS",
                f"Krippendorff's α = {alpha:.2f} rests on {section['units']} scenario(s) "
                "decided by two models or more: with so few, its expected disagreement comes "
                "from the same cells and α is set by construction (one scenario: 0 or undefined)",
                f"No insight is drawn from it; it needs at least {MIN_ALPHA_UNITS} such scenarios",
            )
        ]
    word = (
        "reliable"
        if alpha >= KRIPPENDORFF_RELIABLE
        else "tentative"
        if alpha >= KRIPPENDORFF_TENTATIVE
        else "low"
    )
    return [f"Agreement across all models is {word}: Krippendorff's α = {alpha:.2f}."], []


def _deep(deep: dict[str, Any]) -> tuple[list[str], list[AnalysisWarning]]:
    found = _drivers(deep)
    pca_found, warnings = _pca(deep["pca"])
    found += pca_found
    for method, label in (
        ("mahalanobis", "robust Mahalanobis distance"),
        ("isolationForest", "Isolation Forest"),
        ("jackknife", "jackknife influence on the consensus"),
    ):
        flagged = deep["outliers"].get(method, {}).get("flagged") or []
        if flagged:
            found.append(f"Outliers by {label}: {', '.join(flagged)}.")
    alpha_found, alpha_warnings = _alpha(deep["agreement"]["krippendorffAlpha"])
    found += alpha_found + _first_values(deep)
    return found, warnings + alpha_warnings


def insights_and_warnings(
    basic: dict[str, Any] | None, deep: dict[str, Any]
) -> tuple[list[str], list[AnalysisWarning]]:
    """Sentences from the basic analysis (when given) and the deep one, and the warnings
    that say why a degenerate figure gave none."""
    found: list[str] = []
    if basic is not None:
        found += _agreement(basic) + _profile(basic)
    deep_found, warnings = _deep(deep)
    return found + deep_found, warnings


def insights(basic: dict[str, Any] | None, deep: dict[str, Any]) -> list[str]:
    """The sentences of `insights_and_warnings`."""
    return insights_and_warnings(basic, deep)[0]
