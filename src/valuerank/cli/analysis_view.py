"""Rich tables of analysis results: the same figures as the JSON and the plots, at a glance."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table


def _num(value: Any, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _p(value: Any) -> str:
    if value is None:
        return "–"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def _interval(entry: Any) -> str:
    if not entry:
        return ""
    return f"[{entry['lower']:.2f}, {entry['upper']:.2f}]"


def models_table(analysis: dict[str, Any]) -> Table:
    table = Table(title="Models", caption=(analysis.get("sample") or {}).get("basis"))
    for column in ("model", "n", "decided", "refused", "mean", "sd", "95 % CI", "top value"):
        table.add_column(column, justify="left" if column in ("model", "top value") else "right")
    for model, stats in analysis["perModel"].items():
        overall = stats["overall"]
        values = stats["values"]
        top = ""
        if values:
            name, best = max(values.items(), key=lambda item: item[1]["winRate"])
            top = f"{name} {best['winRate']:.2f} {_interval(best['confidenceInterval'])}"
        refused = stats.get("refusalRate")
        table.add_row(
            model,
            str(stats["sampleSize"]),
            str(stats["decided"]),
            "–" if refused is None else f"{refused:.0%}",
            _num(overall["mean"]),
            _num(overall["stdDev"]),
            _interval(overall.get("confidenceInterval")),
            top,
        )
    return table


def agreement_table(analysis: dict[str, Any]) -> Table:
    section = analysis["modelAgreement"]
    overall = section["overallAgreement"]
    table = Table(
        title="Model agreement (Spearman, Holm-corrected)",
        caption=f"overall agreement {_num(overall)}; outliers: "
        f"{', '.join(section['outlierModels']) or 'none'}",
    )
    for column in ("model 1", "model 2", "n", "ρ", "p (Holm)", "d_z", "effect"):
        table.add_column(column, justify="left" if column.startswith("model") else "right")
    for entry in section["pairwise"].values():
        significant = entry["significant"]
        table.add_row(
            entry["model1"],
            entry["model2"],
            str(entry["n"]),
            _num(entry["spearmanRho"]),
            _p(entry["pValueCorrected"]) + (" *" if significant else ""),
            _num(entry["effectSize"]),
            entry["effectInterpretation"],
        )
    return table


def dimensions_table(analysis: dict[str, Any]) -> Table:
    section = analysis["dimensionAnalysis"]
    table = Table(
        title="Dimension effects (Kruskal–Wallis, all models)",
        caption=f"variance explained (R²): {_num(section['varianceExplained'])}",
    )
    for column in ("rank", "dimension", "η²", "p (Holm)", "n", "missing"):
        table.add_column(column, justify="left" if column == "dimension" else "right")
    for name, entry in sorted(section["dimensions"].items(), key=lambda item: item[1]["rank"]):
        table.add_row(
            str(entry["rank"]),
            name,
            _num(entry["effectSize"]),
            _p(entry["pValueCorrected"]) + (" *" if entry["significant"] else ""),
            str(entry["n"]),
            str(entry["missing"]),
        )
    return table


def contested_table(analysis: dict[str, Any]) -> Table:
    table = Table(title="Most contested scenarios")
    for column in ("scenario", "variance", "scores by model"):
        table.add_column(column)
    for entry in analysis["mostContestedScenarios"]:
        scores = ", ".join(f"{m} {s:.1f}" for m, s in entry["modelScores"].items())
        table.add_row(entry["scenarioName"], _num(entry["variance"]), scores)
    return table


def print_analysis(console: Console, analysis: dict[str, Any]) -> None:
    meta = analysis["meta"]
    cached = " (cached)" if meta.get("cached") else ""
    console.print(
        f"[bold]analysis of run {meta['runId'][:8]}[/]{cached}: {meta['transcripts']} transcripts, "
        f"{meta['decided']} decided, {meta['judged']} judged"
    )
    for table in (
        models_table(analysis),
        agreement_table(analysis),
        dimensions_table(analysis),
        contested_table(analysis),
    ):
        console.print(table)
    deep = analysis.get("deep")
    if deep:
        console.print("[bold]Insights[/]")
        for line in deep["insights"]:
            console.print(f"  • {line}")
        if deep.get("narrative"):
            console.print(f"[bold]Narrative[/]\n{deep['narrative']}")
    for warning in analysis["warnings"] + (deep or {}).get("warnings", []):
        console.print(f"[yellow]{warning['code']}[/]: {warning['message']}")


def comparison_table(result: dict[str, Any]) -> Table:
    method = result["methodsUsed"]["correction"]
    table = Table(
        title="Decision deltas (comparison − baseline)",
        caption=f"p corrected ({method}) across every test; * significant",
    )
    for column in ("model", "n", "baseline", "comparison", "Δ", "95 % CI", "p", "changed"):
        table.add_column(column, justify="left" if column == "model" else "right")
    for model, entry in result["perModel"].items():
        changed = entry["changedDecisions"]
        share = "–" if changed["share"] is None else f"{changed['share']:.0%}"
        test = entry["wilcoxon"]
        table.add_row(
            model,
            str(entry["n"]),
            _num(entry["baselineMean"]),
            _num(entry["comparisonMean"]),
            _num(entry["delta"]),
            _interval(entry["interval"]),
            _p(test.get("pValueCorrected")) + (" *" if test.get("significant") else ""),
            share,
        )
    return table


def print_comparison(console: Console, comparison: dict[str, Any]) -> None:
    result = comparison["result"]
    models = result["models"]
    console.print(
        f"[bold]comparison {comparison['id'][:8]}[/]: baseline {comparison['baseline_run_id'][:8]}"
        f" vs {comparison['comparison_run_id'][:8]}, {result['scenarios']['shared']} shared "
        "scenarios"
    )
    console.print(comparison_table(result))
    values = Table(title="Value win-rate deltas (significant after correction)")
    for column in ("model", "value", "baseline", "comparison", "Δ", "95 % CI", "p"):
        values.add_column(column)
    for model, entries in result["values"].items():
        for value, entry in entries.items():
            if entry.get("significant"):
                values.add_row(
                    model,
                    value,
                    _num(entry["baselineWinRate"]),
                    _num(entry["comparisonWinRate"]),
                    _num(entry["delta"]),
                    _interval(entry["interval"]),
                    _p(entry.get("pValueCorrected")),
                )
    console.print(values)
    diverged = Table(title="Scenarios that diverged most")
    for column in ("scenario", "mean |Δ|"):
        diverged.add_column(column)
    for entry in result["divergedScenarios"]:
        diverged.add_row(entry["scenarioName"], _num(entry["meanAbsDelta"]))
    console.print(diverged)
    if models["baselineOnly"] or models["comparisonOnly"]:
        console.print(
            f"not compared: baseline only {', '.join(models['baselineOnly']) or '-'}; "
            f"comparison only {', '.join(models['comparisonOnly']) or '-'}"
        )
