"""Results across a definition's fork tree: the whole tree from its root, one chosen run per
version, aligned on scenario ids, each change of results next to the definition diff that
caused it.

`lineage_runs` is one recursive query: a version, every descendant, and their runs. The
results always cover the whole tree the asked version belongs to (root to leaves; `relation`
says where each version stands to the asked one). Which run represents a version is chosen
explicitly (`runs`: at most one per version, any status) or by default: the version's latest
completed run; a version may be left out (`exclude`). Every version without a run says why
(`no_run_reason`). Only the models common to every chosen run are compared (`models`:
`compared`, and `dropped` with the runs that lack each one), so every figure rests on the
same models. A version's results are compared with those of its nearest ancestor that has a
chosen run, next to `diff_definitions(ancestor, version)`; the statistics are
`analysis.compare`'s. Scenarios are aligned by id: the ids come from the dimension levels, so
a fork that changes the wording keeps them. Every version's results say what they rest on
(`sample`, `basis`); every empty table says why in `empty`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import literal, select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.analysis import compare
from valuerank.analysis.data import AnalysisInput
from valuerank.db.engine import Database
from valuerank.db.tables import definitions, runs
from valuerank.definitions.diff import diff_definitions, render_diff
from valuerank.definitions.service import get_definition
from valuerank.errors import InvalidInputError
from valuerank.findings.lineage_choice import (
    choose_runs,
    common_models,
    empty_reasons,
    relations,
    tree_order,
)
from valuerank.findings.loading import LoadedRun, load_run
from valuerank.queue.dialect import iso
from valuerank.refs import short_id
from valuerank.runs.service import get_run

LINEAGE_BOOTSTRAP = 500


@dataclass(frozen=True)
class LineageRun:
    definition_id: str
    parent_id: str | None
    label: str
    depth: int
    run_id: str | None
    run_status: str | None
    run_created_at: datetime | None
    run_name: str = ""
    run_models: tuple[str, ...] = ()


async def lineage_runs(conn: AsyncConnection, org_id: str, definition_id: str) -> list[LineageRun]:
    """The version, its descendants and all their runs, in one recursive query."""
    tree = (
        select(definitions.c.id, definitions.c.parent_id, literal(0).label("depth"))
        .where(definitions.c.org_id == org_id, definitions.c.id == definition_id)
        .cte("tree", recursive=True)
    )
    tree = tree.union_all(
        select(definitions.c.id, definitions.c.parent_id, (tree.c.depth + 1).label("depth"))
        .join(tree, definitions.c.parent_id == tree.c.id)
        .where(definitions.c.org_id == org_id)
    )
    rows = await conn.execute(
        select(
            tree.c.id,
            tree.c.parent_id,
            definitions.c.version_label,
            tree.c.depth,
            runs.c.id.label("run_id"),
            runs.c.status,
            runs.c.created_at,
            runs.c.name,
            runs.c.config,
        )
        .select_from(
            tree.join(definitions, definitions.c.id == tree.c.id).outerjoin(
                runs, (runs.c.definition_id == tree.c.id) & (runs.c.org_id == org_id)
            )
        )
        .order_by(tree.c.depth, definitions.c.version_label, runs.c.created_at, runs.c.id)
    )
    return [
        LineageRun(
            r[0], r[1], r[2], int(r[3]), r[4], r[5], r[6], r[7] or "",
            tuple((r[8] or {}).get("models") or ()),
        )
        for r in rows
    ]  # fmt: skip


def model_means(data: AnalysisInput) -> dict[str, Any]:
    """Per model: transcripts, decided, mean decision."""
    found = {}
    for i, model in enumerate(data.models):
        mine = data.model_idx == i
        decided = data.decision[mine & data.decided]
        found[model] = {
            "transcripts": int(mine.sum()),
            "decided": int(decided.size),
            "mean": float(decided.mean()) if decided.size else None,
        }
    return found


def _aligned(loaded: Mapping[str, AnalysisInput]) -> list[dict[str, Any]]:
    """Per scenario id: each version's mean decision per model."""
    table: dict[str, dict[str, dict[str, float]]] = {}
    for version_id, data in loaded.items():
        cells = data.cell_means()
        rows, cols = np.nonzero(~np.isnan(cells))
        for i, j in zip(rows.tolist(), cols.tolist(), strict=True):
            scenario = table.setdefault(data.scenarios[j], {})
            scenario.setdefault(version_id, {})[data.models[i]] = float(cells[i, j])
    return [{"scenarioId": sid, "versions": table[sid]} for sid in sorted(table)]


async def _explicit_runs(
    conn: AsyncConnection, org_id: str, refs: Sequence[str], labels: Mapping[str, str]
) -> dict[str, str]:
    """version id → the run asked for it (each must be of a version of the tree, one each)."""
    found: dict[str, str] = {}
    for ref in refs:
        run = await get_run(conn, org_id, ref)
        version_id = run.definition_id
        if version_id is None or version_id not in labels:
            raise InvalidInputError(
                f"run {short_id(run.id)} is not a run of a version of this definition's tree",
                hint="choose runs of the versions the lineage lists",
            )
        previous = found.get(version_id)
        if previous is not None and previous != run.id:
            raise InvalidInputError(
                f"runs {short_id(previous)} and {short_id(run.id)} are both runs of "
                f"{labels[version_id]}",
                hint="choose at most one run per version",
            )
        found[version_id] = run.id
    return found


async def _excluded(
    conn: AsyncConnection, org_id: str, refs: Sequence[str], labels: Mapping[str, str]
) -> set[str]:
    found = set()
    for ref in refs:
        version = (await get_definition(conn, org_id, ref)).version
        if version.id not in labels:
            raise InvalidInputError(
                f"version {short_id(version.id)} is not in this definition's tree",
                hint="leave out versions the lineage lists",
            )
        found.add(version.id)
    return found


async def lineage_results(
    db: Database,
    org_id: str,
    ref: str,
    *,
    run_refs: Sequence[str] = (),
    exclude: Sequence[str] = (),
) -> dict[str, Any]:
    """The lineage results of the tree `ref` belongs to (see the module docstring): the
    runs `run_refs` (ids or prefixes) represent their versions, `exclude` leaves versions out."""
    async with db.transaction() as conn:
        focus = await get_definition(conn, org_id, ref)
        rows = await lineage_runs(conn, org_id, focus.version.root_id)
        labels = {r.definition_id: r.label for r in rows}
        parents = {r.definition_id: r.parent_id for r in rows}
        depth = {r.definition_id: r.depth for r in rows}
        explicit = await _explicit_runs(conn, org_id, run_refs, labels)
        excluded = await _excluded(conn, org_id, exclude, labels)
        listed: dict[str, list[dict[str, Any]]] = {v: [] for v in tree_order(labels, parents)}
        for row in rows:
            if row.run_id is not None:
                listed[row.definition_id].append(
                    {
                        "id": row.run_id,
                        "name": row.run_name,
                        "status": row.run_status,
                        "created_at": iso(row.run_created_at),
                        "models": list(row.run_models),
                    }
                )
        for version_runs in listed.values():
            version_runs.sort(key=lambda r: (r["created_at"] or "", r["id"]))
        if excluded & explicit.keys():
            left_out = labels[next(iter(excluded & explicit.keys()))]
            raise InvalidInputError(
                f"a run is chosen for {left_out}, which is left out",
                hint="either choose a run for a version or leave it out",
            )
        choices = choose_runs(listed, explicit, excluded)
        loaded: dict[str, LoadedRun] = {}
        for version_id, choice in choices.items():
            if choice.run_id is not None:
                loaded[version_id] = await load_run(
                    conn, await get_run(conn, org_id, choice.run_id)
                )
        stored = {v: (await get_definition(conn, org_id, v)).definition for v in loaded}
    place = relations(parents, focus.version.id)
    answered = {v: list(item.data.models) for v, item in loaded.items()}
    compared, dropped = common_models(
        answered, labels, {v: item.run.id for v, item in loaded.items()}
    )
    data = {v: item.data.only_models(compared) for v, item in loaded.items()}
    versions: dict[str, dict[str, Any]] = {}
    for version_id, version_runs in listed.items():
        choice = choices[version_id]
        entry: dict[str, Any] = {
            "definition_id": version_id,
            "parent_id": parents[version_id],
            "label": labels[version_id],
            "depth": depth[version_id],
            "relation": place[version_id],
            "runs": version_runs,
            "representative_run_id": choice.run_id,
            "chosen_by": choice.chosen_by,
            "no_run_reason": choice.reason,
            "models_answered": answered.get(version_id, []),
        }
        if version_id in loaded:
            sample = loaded[version_id].data.sample
            entry["results"] = model_means(data[version_id])
            entry["sample"] = None if sample is None else sample.to_dict()
            entry["basis"] = None if sample is None else sample.basis
        versions[version_id] = entry
    changes = []
    for version_id in versions if compared else ():
        if version_id not in loaded:
            continue
        ancestor = parents[version_id]
        while ancestor is not None and ancestor in versions and ancestor not in loaded:
            ancestor = parents[ancestor]
        if ancestor is None or ancestor not in loaded:
            continue
        diff = diff_definitions(stored[ancestor], stored[version_id])
        result = await asyncio.to_thread(
            compare, data[ancestor], data[version_id], bootstrap=LINEAGE_BOOTSTRAP
        )
        changes.append(
            {
                "from": ancestor,
                "to": version_id,
                "from_label": labels[ancestor],
                "to_label": labels[version_id],
                "from_run": loaded[ancestor].run.id,
                "to_run": loaded[version_id].run.id,
                "diff": diff.to_dict(),
                "diff_lines": render_diff(diff),
                "comparison": result,
            }
        )
    aligned = _aligned(data) if compared else []
    return {
        "definition_id": focus.version.id,
        "root_id": focus.version.root_id,
        "name": focus.version.name,
        "label": focus.version.version_label,
        "models": {"compared": compared, "dropped": dropped},
        "versions": list(versions.values()),
        "changes": changes,
        "aligned": aligned,
        "empty": empty_reasons(versions, compared, changes, aligned),
    }
