"""Which run represents each version of a lineage, which models are compared, and why a table
is empty: the pure decisions behind `findings/lineage.py` (no I/O).

A version is represented by the run asked for it, else by its latest completed run, unless it
is left out; a version without one says why. Only the models every chosen run answered are
compared; each other model is named with the runs that lack it. The tree is listed depth first
from its root, each version placed relative to the one asked about.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from valuerank.refs import short_id
from valuerank.runs.states import RunStatus
from valuerank.versioning import label_sort_key

ChosenBy = Literal["explicit", "latest_completed"]
LEFT_OUT = "left out of this comparison"


@dataclass(frozen=True)
class Choice:
    """Which run represents a version, how it was chosen, or why none does."""

    run_id: str | None
    chosen_by: ChosenBy | None
    reason: str | None


def no_run_reason(version_runs: Sequence[Mapping[str, Any]]) -> str:
    if not version_runs:
        return "no run uses this version"
    counts = Counter(str(r["status"]) for r in version_runs)
    listed = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    return f"no completed run ({listed})"


def choose_runs(
    version_runs: Mapping[str, Sequence[Mapping[str, Any]]],
    explicit: Mapping[str, str],
    excluded: Collection[str],
) -> dict[str, Choice]:
    """Per version (runs in creation order): the explicit run, else the latest completed."""
    chosen = {}
    for version_id, listed in version_runs.items():
        if version_id in excluded:
            chosen[version_id] = Choice(None, None, LEFT_OUT)
        elif version_id in explicit:
            chosen[version_id] = Choice(explicit[version_id], "explicit", None)
        else:
            done = [r for r in listed if r["status"] == RunStatus.COMPLETED.value]
            chosen[version_id] = (
                Choice(done[-1]["id"], "latest_completed", None)
                if done
                else Choice(None, None, no_run_reason(listed))
            )
    return chosen


def common_models(
    answered: Mapping[str, Sequence[str]], labels: Mapping[str, str], chosen: Mapping[str, str]
) -> tuple[list[str], list[dict[str, Any]]]:
    """(models every chosen run answered, the others with the runs that lack each one);
    `answered`, `chosen`: version id → the models of its run, its run id."""
    if not answered:
        return [], []
    every = set.intersection(*(set(m) for m in answered.values()))
    dropped = []
    for model in sorted(set().union(*answered.values()) - every):
        missing = [v for v, models in answered.items() if model not in models]
        where = ", ".join(f"{labels[v]} (run {short_id(chosen[v])})" for v in missing)
        dropped.append(
            {
                "model": model,
                "missing_from": [
                    {"definition_id": v, "label": labels[v], "run_id": chosen[v]} for v in missing
                ],
                "reason": f"no transcript in the run chosen for {where}",
            }
        )
    return sorted(every), dropped


def tree_order(labels: Mapping[str, str], parents: Mapping[str, str | None]) -> list[str]:
    """Version ids depth first from the root, siblings in natural label order."""
    children: dict[str | None, list[str]] = {}
    for version_id, parent in parents.items():
        children.setdefault(parent if parent in labels else None, []).append(version_id)
    for below in children.values():
        below.sort(key=lambda v: label_sort_key(labels[v]), reverse=True)
    order: list[str] = []
    pending = list(children.get(None, []))
    while pending:
        version_id = pending.pop()
        order.append(version_id)
        pending.extend(children.get(version_id, []))
    return order


def relations(parents: Mapping[str, str | None], focus: str) -> dict[str, str]:
    """Each version's place relative to `focus`: this, ancestor, descendant, other branch."""

    def chain(version_id: str) -> list[str]:
        found: list[str] = []
        current = parents.get(version_id)
        while current is not None and current in parents:
            found.append(current)
            current = parents[current]
        return found

    above = set(chain(focus))
    return {
        v: "this"
        if v == focus
        else "ancestor"
        if v in above
        else "descendant"
        if focus in chain(v)
        else "other branch"
        for v in parents
    }


def empty_reasons(
    versions: Mapping[str, dict[str, Any]],
    compared: list[str],
    changes: list[dict[str, Any]],
    aligned: list[dict[str, Any]],
) -> dict[str, str | None]:
    """Why each table that is empty is empty (None: it is not)."""
    with_runs = [v for v in versions.values() if v["representative_run_id"] is not None]
    models: str | None = None
    if not with_runs:
        left_out = any(v["no_run_reason"] == LEFT_OUT for v in versions.values())
        models = "No version of this tree has a completed run" + (
            " that was not left out" if left_out else ""
        ) + ": start a run of a version, or choose a run that is not completed yet."  # fmt: skip
    elif not compared:
        each = "; ".join(
            f"{v['label']} (run {short_id(v['representative_run_id'])}): "
            f"{', '.join(v['models_answered']) or 'no transcripts'}"
            for v in with_runs
        )
        models = f"The chosen runs have no model in common ({each}): choose other runs."
    change_reason = models
    if change_reason is None and not changes:
        if len(with_runs) == 1:
            change_reason = (
                f"Only {with_runs[0]['label']} has a run: a change needs two versions with "
                "runs, one descending from the other."
            )
        else:
            labels = ", ".join(v["label"] for v in with_runs)
            change_reason = (
                f"The versions with runs ({labels}) are on separate branches: none descends "
                "from another. Compare their runs directly on the compare page."
            )
    aligned_reason = models
    if aligned_reason is None and not aligned:
        aligned_reason = "The chosen runs have no decided answer of the compared models yet."
    return {"models": models, "changes": change_reason, "aligned": aligned_reason}
