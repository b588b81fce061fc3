"""Rich text of a definition's lineage results (`valuerank lineage results`), printed from
the same JSON whether the database or a server (`GET /api/definitions/{id}/lineage/results`)
answered."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from valuerank.refs import short_id


def print_lineage(console: Console, data: dict[str, Any]) -> None:
    console.print(f"[bold]{data['name']}[/]: {len(data['versions'])} versions")
    for version in data["versions"]:
        means = ", ".join(
            f"{m} {r['mean']:.2f}" if r["mean"] is not None else f"{m} –"
            for m, r in (version.get("results") or {}).items()
        )
        indent = "  " * version["depth"]
        basis = f" ({version['basis']})" if version.get("basis") else ""
        represented = (
            f"run {short_id(version['representative_run_id'])} "
            f"({'chosen' if version['chosen_by'] == 'explicit' else 'latest completed'}): "
            f"{means or 'no results'}{basis}"
            if version["representative_run_id"]
            else version["no_run_reason"]
        )
        console.print(
            f"{indent}{version['label']}: {len(version['runs'])} runs; {represented}",
            highlight=False,
            markup=False,
        )
    models = data["models"]
    if models["compared"]:
        console.print(f"compared: {', '.join(models['compared'])}", highlight=False)
    for dropped in models["dropped"]:
        console.print(f"left out: {dropped['model']}: {dropped['reason']}", highlight=False)
    for change in data["changes"]:
        console.print(f"[bold]{change['from_label']} → {change['to_label']}[/]")
        for line in change["diff_lines"]:
            console.print(f"  {line}", highlight=False, markup=False)
        for model, entry in change["comparison"]["perModel"].items():
            console.print(f"  {model}: Δ {entry['delta'] if entry['delta'] is not None else '–'}")
    for table, reason in data["empty"].items():
        if reason is not None and (table != "aligned" or reason != data["empty"]["changes"]):
            console.print(f"no {table}: {reason}", highlight=False, markup=False)
