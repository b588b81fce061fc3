"""Rich tables of the deep analysis: PCA, outliers, agreement (κ, α), Bradley–Terry
strengths, correlations — the figures of `analysis.deep` at a glance, each table captioned
with what the run rests on when it is a sample."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table

from valuerank.cli.analysis_format import grouped_table, interval_text, num, p_text

PCA_SHOWN = 3  # components shown in the table


def _basis(deep: Mapping[str, Any]) -> str | None:
    sample = deep.get("sample") or {}
    return sample.get("basis") if sample.get("sampled") else None


def _caption(*parts: str | None) -> str | None:
    kept = [p for p in parts if p]
    return "; ".join(kept) or None


def pca_table(deep: Mapping[str, Any]) -> Table:
    section = deep["pca"]
    if not section.get("available"):
        table = Table(title="PCA of models", caption=_caption(section.get("reason"), _basis(deep)))
        table.add_column("model")
        return table
    ratios = section["explainedVarianceRatio"]
    shown = min(PCA_SHOWN, len(ratios))
    explained = ", ".join(f"PC{k + 1} {r:.0%}" for k, r in enumerate(ratios))
    table = Table(
        title="PCA of models (standardised per scenario)",
        caption=_caption(
            f"explained variance: {explained}; {section['scenariosUsed']} scenarios, "
            f"{section['imputedCells']} cells imputed",
            _basis(deep),
        ),
    )
    table.add_column("model")
    for k in range(shown):
        table.add_column(f"PC{k + 1} ({ratios[k]:.0%})", justify="right")
    for model, coords in section["coordinates"].items():
        table.add_row(model, *(num(c) for c in coords[:shown]))
    return table


def _flag(value: Any, model: str, section: Mapping[str, Any], key: str = "flagged") -> str:
    return num(value) + (" *" if model in section.get(key, []) else "")


def outliers_table(deep: Mapping[str, Any]) -> Table:
    section = deep["outliers"]
    mahalanobis = section["mahalanobis"]
    forest = section["isolationForest"]
    jackknife = section["jackknife"]
    notes = []
    if mahalanobis.get("available"):
        notes.append(
            f"Mahalanobis (MCD) in {mahalanobis['space']} space, threshold "
            f"{num(mahalanobis['threshold'])}"
        )
    else:
        notes.append(f"Mahalanobis: {mahalanobis.get('reason', 'not available')}")
    if not forest.get("available"):
        notes.append(f"Isolation Forest: {forest.get('reason', 'not available')}")
    if jackknife.get("available"):
        notes.append(f"jackknife flagged above modified z {jackknife['threshold']['modifiedZ']}")
    table = Table(
        title="Outlier models (* flagged)", caption=_caption("; ".join(notes), _basis(deep))
    )
    for column in ("model", "Mahalanobis d", "Isolation Forest score", "jackknife influence"):
        table.add_column(column, justify="left" if column == "model" else "right")
    distances = mahalanobis.get("distances", {})
    scores = forest.get("scores", {})
    influence = jackknife.get("influence", {})
    for model in sorted(set(distances) | set(scores) | set(influence)):
        table.add_row(
            model,
            _flag(distances.get(model), model, mahalanobis),
            _flag(scores.get(model), model, forest),
            _flag(influence.get(model), model, jackknife),
        )
    return table


def agreement_table(deep: Mapping[str, Any]) -> Table:
    section = deep["agreement"]
    alpha = section["krippendorffAlpha"]
    table = Table(
        title="Agreement: Spearman ρ and quadratic-weighted Cohen's κ",
        caption=_caption(
            f"Krippendorff's α ({alpha['level']}) {num(alpha['value'])} over "
            f"{alpha['coders']} models and {alpha['units']} scenarios",
            _basis(deep),
        ),
    )
    for column in ("model 1", "model 2", "n", "ρ", "p (Holm)", "κ_w"):
        table.add_column(column, justify="left" if column.startswith("model") else "right")
    for entry in section["pairwise"].values():
        table.add_row(
            entry["model1"],
            entry["model2"],
            str(entry["n"]),
            num(entry["spearmanRho"]),
            p_text(entry["pValueCorrected"]) + (" *" if entry["significant"] else ""),
            num(entry.get("weightedKappa")),
        )
    return table


def _bt_rank(entry: Mapping[str, Any]) -> tuple[int, float]:
    """Separated-above values first, then by strength, then below, then unordered: a
    separated value's strength is null (infinite or undetermined)."""
    if entry["strength"] is not None:
        return 1, -entry["strength"]
    return {"above": 0, "below": 2}.get(entry.get("direction") or "", 3), 0.0


def _bt_strength(entry: Mapping[str, Any]) -> str:
    if entry["strength"] is not None:
        return num(entry["strength"])
    return f"separated ({entry.get('direction') or 'unordered'})"


def bradley_terry_table(deep: Mapping[str, Any]) -> Table:
    groups: dict[str, list[list[str]]] = {}
    for model, fit in deep["bradleyTerry"].items():
        values = [] if fit is None else fit["values"].items()
        ranked = sorted(values, key=lambda item: _bt_rank(item[1]))
        groups[model] = [[value, _bt_strength(e), interval_text(e)] for value, e in ranked]
    return grouped_table(
        "Bradley–Terry value strengths (log scale, mean 0)",
        ("value", "strength", "95 % CI (cluster-robust)"),
        groups,
        caption=_caption("strongest first", _basis(deep)),
        empty="no comparison between two values",
    )


def correlations_table(deep: Mapping[str, Any]) -> Table:
    groups: dict[str, list[list[str]]] = {}
    for model, entries in deep["correlations"].items():
        groups[model] = [
            [
                dim,
                num(entry["pearson"]["r"]),
                interval_text(entry["pearson"]["interval"]),
                num(entry["spearman"]["rho"]),
                interval_text(entry["spearman"]["interval"]),
                str(entry["n"]),
            ]
            for dim, entry in entries.items()
        ]
    return grouped_table(
        "Dimension ↔ decision correlations",
        ("dimension", "Pearson r", "95 % CI", "Spearman ρ", "95 % CI", "n"),
        groups,
        caption=_caption("per model over its decided transcripts", _basis(deep)),
    )


def print_deep(console: Console, deep: Mapping[str, Any], cached: bool | None) -> None:
    console.print(
        "[bold]deep analysis[/]"
        + (" (cached)" if cached else "")
        + (f": {_basis(deep)}" if _basis(deep) else "")
    )
    for table in (
        pca_table(deep),
        outliers_table(deep),
        agreement_table(deep),
        bradley_terry_table(deep),
        correlations_table(deep),
    ):
        console.print(table)
    console.print("[bold]Insights[/]")
    for line in deep["insights"]:
        console.print(f"  • {line}")
    if deep.get("narrative"):
        console.print(f"[bold]Narrative[/]\n{deep['narrative']}")
