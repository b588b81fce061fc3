"""`valuerank analyze`'s judge agreement tables (`analysis.judgeAgreement`): α and Fleiss' κ
between the judges per value, and each judge against the consensus and against people."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from valuerank.cli.analysis_format import interval_text, num


def figure(entry: dict[str, Any] | None) -> tuple[str, str]:
    """A {value, ci95} figure as (value, interval) texts."""
    if not entry:
        return "–", ""
    return num(entry.get("value")), interval_text(entry.get("ci95"))


def values_table(section: dict[str, Any]) -> Table:
    table = Table(
        title="Judge agreement per value (Krippendorff's α, nominal; Fleiss' κ)",
        caption=f"judges: {', '.join(section['judges']) or 'none'}; 95 % intervals resample "
        f"scenarios ({section['bootstrap']['draws']} draws)",
    )
    for column in ("value", "units", "α", "95 % CI", "Fleiss κ", "95 % CI", "p / d / n"):
        table.add_column(column, justify="left" if column == "value" else "right")
    for name, entry in section["values"].items():
        counts = entry["readings"]
        fleiss = entry["fleissKappa"]
        table.add_row(
            name,
            str(entry["units"]),
            *figure(entry.get("alpha")),
            *(figure(fleiss) if fleiss.get("value") is not None else ("–", "")),
            f"{counts['prioritized']} / {counts['deprioritized']} / {counts['neither']}",
        )
    return table


def versus_table(title: str, entries: dict[str, Any]) -> Table:
    table = Table(title=title)
    for column in ("judge", "transcripts", "agreement", "95 % CI", "Cohen κ", "95 % CI"):
        table.add_column(column, justify="left" if column == "judge" else "right")
    for judge, entry in entries.items():
        table.add_row(
            judge, str(entry["transcripts"]), *figure(entry["share"]), *figure(entry["kappa"])
        )
    return table


def print_judge_agreement(console: Console, analysis: dict[str, Any]) -> None:
    section = analysis.get("judgeAgreement")
    if not section:
        return
    if section["judges"]:
        console.print(values_table(section))
        console.print(versus_table("Each judge against the consensus", section["withConsensus"]))
    if section["withPeople"]:
        people = ", ".join(section["people"])
        console.print(versus_table(f"Each judge against people ({people})", section["withPeople"]))
