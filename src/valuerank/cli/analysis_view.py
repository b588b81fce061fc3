"""Rich tables of analysis results: the same figures as the JSON and the plots, at a glance."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from valuerank.analysis.sensitivity_words import scale_ends, sentence
from valuerank.cli.analysis_deep_view import print_deep
from valuerank.cli.analysis_format import grouped_table, interval_text, num, p_text
from valuerank.cli.judge_agreement_view import print_judge_agreement
from valuerank.cli.robustness_view import ranks_table, robustness_table
from valuerank.refs import short_id


def no_interval(status: str) -> str:
    """Why an entry has no interval (the warnings say more)."""
    return "no interval" if status == "ok" else status.replace("_", " ")


def sensitivity_table(analysis: dict[str, Any]) -> Table:
    """What moves each model: decision points per unit of each stake's level score, from the
    decisions alone (analysis/sensitivity.py), largest effect first."""
    low, high = scale_ends(analysis.get("scaleLabels"))
    groups = {}
    for model, dims in analysis.get("valueSensitivity", {}).items():
        ranked = sorted(dims.items(), key=lambda item: -abs(item[1]["coefficient"] or 0.0))
        groups[model] = [
            [
                entry["value"],
                dim,
                "–" if entry["coefficient"] is None else f"{entry['coefficient']:+z.2f}",
                interval_text(entry["ci95"]) or no_interval(entry["status"]),
                p_text(entry["pValue"]),
                str(entry["n"]),
            ]
            for dim, entry in ranked
        ]
    ends = f"+ towards '{high}', − towards '{low}'; " if high and low else ""
    return grouped_table(
        "Value sensitivity: decision points per score unit of the stake (others fixed)",
        ("value", "dimension", "points/unit", "95 % CI", "p", "n"),
        groups,
        caption=f"{ends}OLS, intervals cluster-robust by scenario",
        empty="no decisions",
    )


def sensitivity_lines(analysis: dict[str, Any], limit: int = 3) -> list[str]:
    """The strongest findings in words, one per model (those whose interval excludes 0)."""
    labels = analysis.get("scaleLabels")
    found = []
    for model, dims in analysis.get("valueSensitivity", {}).items():
        clear = [e for e in dims.values() if e["ci95"] and (e["ci95"][0] > 0 or e["ci95"][1] < 0)]
        if clear:
            strongest = max(clear, key=lambda e: abs(e["coefficient"]))
            found.append(sentence(model, strongest, labels))
    return found[:limit] if limit else found


def models_table(analysis: dict[str, Any]) -> Table:
    table = Table(title="Models", caption=(analysis.get("sample") or {}).get("basis"))
    for column in ("model", "n", "decided", "refused", "mean", "sd", "95 % CI"):
        table.add_column(column, justify="left" if column == "model" else "right")
    for model, stats in analysis["perModel"].items():
        overall = stats["overall"]
        refused = stats.get("refusalRate")
        table.add_row(
            model,
            str(stats["sampleSize"]),
            str(stats["decided"]),
            "–" if refused is None else f"{refused:.0%}",
            num(overall["mean"]),
            num(overall["stdDev"]),
            interval_text(overall.get("confidenceInterval")),
        )
    return table


def win_rates_table(analysis: dict[str, Any]) -> Table:
    """Every value's win rate per model with its interval and counts, highest first."""
    groups = {}
    for model, stats in analysis["perModel"].items():
        ranked = sorted(stats["values"].items(), key=lambda item: -item[1]["winRate"])
        groups[model] = [
            [
                value,
                num(entry["winRate"]),
                interval_text(entry["confidenceInterval"]),
                f"{entry['count']['prioritized']} / {entry['count']['deprioritized']}",
            ]
            for value, entry in ranked
            if entry["count"]["prioritized"] + entry["count"]["deprioritized"] > 0
        ]
    method = analysis.get("methodsUsed", {}).get("winRateCI", "wilson_score")
    return grouped_table(
        "Value win rates: prioritised / (prioritised + deprioritised)",
        ("value", "win rate", "95 % CI", "p / d"),
        groups,
        caption=f"95 % interval: {method}; values never prioritised nor deprioritised are left out",
        empty="no judged value",
    )


def agreement_table(analysis: dict[str, Any]) -> Table:
    section = analysis["modelAgreement"]
    overall = section["overallAgreement"]
    table = Table(
        title="Model agreement (Spearman, Holm-corrected)",
        caption=f"overall agreement {num(overall)}; outliers: "
        f"{', '.join(section['outlierModels']) or 'none'}",
    )
    for column in ("model 1", "model 2", "n", "ρ", "p (Holm)", "mean diff", "d_z", "diff size"):
        table.add_column(column, justify="left" if column.startswith("model") else "right")
    for entry in section["pairwise"].values():
        significant = entry["significant"]
        table.add_row(
            entry["model1"],
            entry["model2"],
            str(entry["n"]),
            num(entry["spearmanRho"]),
            p_text(entry["pValueCorrected"]) + (" *" if significant else ""),
            num(entry["meanDifference"]),
            num(entry["meanDifferenceDz"]),
            entry["meanDifferenceSize"],
        )
    return table


def dimensions_table(analysis: dict[str, Any]) -> Table:
    section = analysis["dimensionAnalysis"]
    table = Table(
        title="Dimension effects (Kruskal–Wallis, all models)",
        caption=f"variance explained (R²): {num(section['varianceExplained'])}, adjusted "
        f"{num(section.get('varianceExplainedAdjusted'))}, by chance alone "
        f"{num(section.get('varianceExplainedByChance'))}",
    )
    for column in ("rank", "dimension", "η²", "ε² (adj.)", "p (Holm)", "n", "missing"):
        table.add_column(column, justify="left" if column == "dimension" else "right")
    for name, entry in sorted(section["dimensions"].items(), key=lambda item: item[1]["rank"]):
        table.add_row(
            str(entry["rank"]),
            name,
            num(entry["effectSize"]),
            num(entry.get("epsilonSquared")),
            p_text(entry["pValueCorrected"]) + (" *" if entry["significant"] else ""),
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
        table.add_row(entry["scenarioName"], num(entry["variance"]), scores)
    return table


def print_analysis(console: Console, analysis: dict[str, Any]) -> None:
    meta = analysis["meta"]
    cached = " (cached)" if meta.get("cached") else ""
    console.print(
        f"[bold]analysis of run {short_id(meta['runId'])}[/]{cached}: "
        f"{meta['transcripts']} transcripts, "
        f"{meta['decided']} decided, {meta['judged']} judged"
    )
    if meta["transcripts"] and not meta["judged"]:
        console.print(
            "no judge has read this run: no value win rates; add judges with "
            f"`valuerank runs judge {short_id(meta['runId'])} --judge MODEL`",
            highlight=False,
            soft_wrap=True,
        )
    if analysis.get("valueSensitivity"):  # shown first: needs no judge
        console.print(sensitivity_table(analysis))
        for line in sensitivity_lines(analysis, limit=0):
            console.print(f"  {line}", soft_wrap=True)
    if analysis.get("robustness"):
        console.print(robustness_table(analysis))
        ranks = ranks_table(analysis)
        if ranks is not None:
            console.print(ranks)
    tables = [models_table(analysis)]
    if analysis["meta"].get("values"):
        tables.append(win_rates_table(analysis))
    tables += [agreement_table(analysis), dimensions_table(analysis), contested_table(analysis)]
    for table in tables:
        console.print(table)
    print_judge_agreement(console, analysis)
    deep = analysis.get("deep")
    if deep:
        print_deep(console, deep, analysis["meta"].get("deepCached"))
    seen: set[tuple[str, str]] = set()
    for warning in analysis["warnings"] + (deep or {}).get("warnings", []):
        key = (warning["code"], warning["message"])
        if key not in seen:  # the deep section repeats SAMPLED_RUN for its own readers
            seen.add(key)
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
            num(entry["baselineMean"]),
            num(entry["comparisonMean"]),
            num(entry["delta"]),
            interval_text(entry["interval"]),
            p_text(test.get("pValueCorrected")) + (" *" if test.get("significant") else ""),
            share,
        )
    return table


def print_comparison(console: Console, comparison: dict[str, Any]) -> None:
    result = comparison["result"]
    models = result["models"]
    console.print(
        f"[bold]comparison {short_id(comparison['id'])}[/]: "
        f"baseline {short_id(comparison['baseline_run_id'])}"
        f" vs {short_id(comparison['comparison_run_id'])}, {result['scenarios']['shared']} shared "
        "scenarios"
    )
    for side in ("baseline", "comparison"):
        console.print(f"  {side}: {basis_text((result.get('samples') or {}).get(side))}")
    console.print(comparison_table(result))
    values = Table(
        title="Value win-rate deltas (significant after correction)",
        caption="h: Cohen's h of the two win rates",
    )
    for column in ("model", "value", "baseline", "comparison", "Δ", "95 % CI", "p", "h"):
        values.add_column(column)
    for model, entries in result["values"].items():
        for value, entry in entries.items():
            if entry.get("significant"):
                values.add_row(
                    model,
                    value,
                    num(entry["baselineWinRate"]),
                    num(entry["comparisonWinRate"]),
                    num(entry["delta"]),
                    interval_text(entry["interval"]),
                    p_text(entry.get("pValueCorrected")),
                    num((entry.get("effectSize") or {}).get("cohensH")),
                )
    console.print(values)
    diverged = Table(title="Scenarios that diverged most")
    for column in ("scenario", "mean |Δ|"):
        diverged.add_column(column)
    for entry in result["divergedScenarios"]:
        diverged.add_row(entry["scenarioName"], num(entry["meanAbsDelta"]))
    console.print(diverged)
    if models["baselineOnly"] or models["comparisonOnly"]:
        console.print(
            f"not compared: baseline only {', '.join(models['baselineOnly']) or '-'}; "
            f"comparison only {', '.join(models['comparisonOnly']) or '-'}"
        )
    for warning in result.get("warnings", []):
        if warning["code"] in ("SAMPLED_RUN", "POPULATION_UNKNOWN"):
            console.print(f"[yellow]{warning['code']}[/]: {warning['message']}")


def basis_text(sample: dict[str, Any] | None) -> str:
    """What a run's figures rest on ("based on 10 % sample: 12 of 120 scenarios")."""
    if not sample:
        return "basis unknown"
    return str(sample["basis"])
