"""Rich tables of `analysis.robustness`: how far each model's decisions survive the scale's
order and the wording, how consistent they are, and the ranks of its values with intervals."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from valuerank.cli.analysis_format import grouped_table, interval_text, num, p_text


def effect_text(effect: dict[str, Any] | None, reason: str | None) -> str:
    """`+0.42 [0.20, 0.64]` (value and interval), or why there is none."""
    if effect is None or effect.get("value") is None:
        return reason or "–"
    interval = interval_text(effect.get("ci95"))
    return f"{effect['value']:+z.2f}" + (f" {interval}" if interval else "")


def order_effect_text(entry: dict[str, Any]) -> str:
    """A model's order effect in one cell (the demo's table uses it too)."""
    return effect_text(entry.get("orderEffect"), entry.get("reasons", {}).get("orderEffect"))


def robustness_table(analysis: dict[str, Any]) -> Table:
    """One row per model: order effect, phrasing shift and share, consistency."""
    table = Table(
        title="Robustness: the scale's order, the wording, consistency",
        caption="order: as written − reversed (+ pulls towards the higher number shown); "
        "phrasing: other phrasings − the first; consistency: scenarios whose decisions lie "
        "within one point",
    )
    for column in ("model", "order effect", "p", "phrasing shift", "phrasing share", "consistent"):
        table.add_column(column, justify="left" if column == "model" else "right")
    for model, entry in analysis.get("robustness", {}).items():
        reasons = entry.get("reasons", {})
        order = entry.get("orderEffect")
        phrasing = entry.get("phrasingEffect")
        share = "–"
        if phrasing is not None and phrasing["varianceShare"]["value"] is not None:
            share_entry = phrasing["varianceShare"]
            share = f"{share_entry['value']:.2f} {interval_text(share_entry['ci95'])}".strip()
        agreed = entry.get("consistency")
        consistent = reasons.get("consistency", "–")
        if agreed is not None:
            consistent = (
                f"{agreed['value']:.0%} {interval_text(agreed['ci95'])} "
                f"of {agreed['scenarios']}, entropy {num(agreed['entropy']['mean'])}"
            )
        table.add_row(
            model,
            order_effect_text(entry),
            p_text(None if order is None else order.get("pValue")),
            effect_text(
                None if phrasing is None else phrasing["shift"], reasons.get("phrasingEffect")
            ),
            share,
            consistent,
        )
    return table


def rank_text(entry: dict[str, Any]) -> str:
    """`2 [1–3]`: a value's rank and its 95 % interval."""
    low, high = entry["ci95"]
    return f"{entry['rank']} [{low}–{high}]" if low != high else f"{entry['rank']} [{low}]"


def ranks_text(entry: dict[str, Any], limit: int = 3) -> str:
    """A model's top values with rank intervals in one cell: `Harm 1 [1–2], Cost 2 [1–3]`
    (by win rate when judged, else by sensitivity); "" without a ranking."""
    ranking = entry.get("ranking") or {}
    ranked = ranking.get("winRate") or ranking.get("sensitivity")
    if not ranked:
        return ""
    return ", ".join(f"{v['value']} {rank_text(v)}" for v in ranked["values"][:limit])


def ranks_table(analysis: dict[str, Any]) -> Table | None:
    """Each model's values by rank with 95 % intervals (win rate, else sensitivity); None
    when no model has a ranking."""
    groups: dict[str, list[list[str]]] = {}
    for model, entry in analysis.get("robustness", {}).items():
        ranking = entry.get("ranking") or {}
        rows: list[list[str]] = []
        for basis, label in (("winRate", "win rate"), ("sensitivity", "|points/unit|")):
            ranked = ranking.get(basis)
            if ranked is None:
                continue
            values = ranked["values"]
            for k, value in enumerate(values):
                ahead = values[k + 1]["value"] if k + 1 < len(values) else None
                above = "" if ahead is None else num(ranked["pAbove"][value["value"]][ahead])
                figure = num(value["estimate"])
                rows.append([label, value["value"], rank_text(value), figure, above])
        if rows:
            groups[model] = rows
    if not groups:
        return None
    return grouped_table(
        "Ranks of values with 95 % intervals (scenario bootstrap)",
        ("by", "value", "rank [95 % CI]", "figure", "P(above next)"),
        groups,
        caption="P(above next): share of resamples ranking the value above the next one",
    )
