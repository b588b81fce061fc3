"""Results across a definition's fork tree: every version's runs, aligned on scenario ids,
each change of results next to the definition diff that caused it.

`lineage_runs` is one recursive query: the definition, every descendant, and their runs.
Each version is represented by its latest completed run; a version's results are compared
with those of its nearest ancestor (within the tree asked about) that has one, next to
`diff_definitions(ancestor, version)`. Scenarios are aligned by id: the ids come from the
dimension levels, so a fork that changes the wording keeps them and one that changes the
dimensions shows which scenarios are new or gone. Every version's results say what they
rest on (`sample`, `basis`: "based on 10 % sample: 12 of 120 scenarios"); each comparison
names both runs' bases and warns when either is a sample.
"""

from __future__ import annotations

import asyncio
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
from valuerank.findings.loading import LoadedRun, load_run
from valuerank.queue.dialect import iso
from valuerank.runs.service import get_run
from valuerank.runs.states import RunStatus

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
        )
        .select_from(
            tree.join(definitions, definitions.c.id == tree.c.id).outerjoin(
                runs, (runs.c.definition_id == tree.c.id) & (runs.c.org_id == org_id)
            )
        )
        .order_by(tree.c.depth, definitions.c.version_label, runs.c.created_at, runs.c.id)
    )
    return [LineageRun(r[0], r[1], r[2], int(r[3]), r[4], r[5], r[6]) for r in rows]


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


def _aligned(loaded: dict[str, LoadedRun]) -> list[dict[str, Any]]:
    """Per scenario id: each version's mean decision per model."""
    table: dict[str, dict[str, dict[str, float]]] = {}
    for version_id, item in loaded.items():
        cells = item.data.cell_means()
        rows, cols = np.nonzero(~np.isnan(cells))
        for i, j in zip(rows.tolist(), cols.tolist(), strict=True):
            scenario = table.setdefault(item.data.scenarios[j], {})
            scenario.setdefault(version_id, {})[item.data.models[i]] = float(cells[i, j])
    return [{"scenarioId": sid, "versions": table[sid]} for sid in sorted(table)]


async def lineage_results(db: Database, org_id: str, ref: str) -> dict[str, Any]:
    async with db.transaction() as conn:
        root = await get_definition(conn, org_id, ref)
        rows = await lineage_runs(conn, org_id, root.version.id)
        versions: dict[str, dict[str, Any]] = {}
        for row in rows:
            entry = versions.setdefault(
                row.definition_id,
                {
                    "definition_id": row.definition_id,
                    "parent_id": row.parent_id,
                    "label": row.label,
                    "depth": row.depth,
                    "runs": [],
                },
            )
            if row.run_id is not None:
                entry["runs"].append(
                    {
                        "id": row.run_id,
                        "status": row.run_status,
                        "created_at": iso(row.run_created_at),
                    }
                )
        loaded: dict[str, LoadedRun] = {}
        for version_id, entry in versions.items():
            done = [r for r in entry["runs"] if r["status"] == RunStatus.COMPLETED.value]
            if done:
                run = await get_run(conn, org_id, done[-1]["id"])
                loaded[version_id] = await load_run(conn, run)
                entry["representative_run_id"] = run.id
            else:
                entry["representative_run_id"] = None
        stored = {v: (await get_definition(conn, org_id, v)).definition for v in versions}
    for version_id, item in loaded.items():
        versions[version_id]["results"] = model_means(item.data)
        sample = item.data.sample
        versions[version_id]["sample"] = None if sample is None else sample.to_dict()
        versions[version_id]["basis"] = None if sample is None else sample.basis
    changes = []
    for version_id, entry in versions.items():
        if version_id not in loaded or entry["depth"] == 0:
            continue
        ancestor = entry["parent_id"]
        while ancestor is not None and ancestor in versions and ancestor not in loaded:
            ancestor = versions[ancestor]["parent_id"]
        if ancestor is None or ancestor not in loaded:
            continue
        diff = diff_definitions(stored[ancestor], stored[version_id])
        result = await asyncio.to_thread(
            compare, loaded[ancestor].data, loaded[version_id].data, bootstrap=LINEAGE_BOOTSTRAP
        )
        changes.append(
            {
                "from": ancestor,
                "to": version_id,
                "from_label": versions[ancestor]["label"],
                "to_label": entry["label"],
                "diff": diff.to_dict(),
                "diff_lines": render_diff(diff),
                "comparison": result,
            }
        )
    return {
        "definition_id": root.version.id,
        "name": root.version.name,
        "versions": list(versions.values()),
        "changes": changes,
        "aligned": _aligned(loaded),
    }
