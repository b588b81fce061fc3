"""A definition's leaderboard: models × values, the value win rates pooled over every
completed run of any version of the definition's tree (analysis/pooled.py says how).

Every completed run of the tree is read (its transcripts and the judges' consensus, as its
analysis reads them) and pooled; each cell carries the runs, judged transcripts and scenarios
behind it. Rows sort by model or by one value's win rate. An empty board says why: no
completed run, or no judged transcript among them.
"""

from __future__ import annotations

import asyncio
from typing import Any

from valuerank.analysis.intervals import LEVEL
from valuerank.analysis.pooled import (
    POOLED_HOW,
    POOLED_METHOD,
    PooledCell,
    RunVerdicts,
    pool_win_rates,
    run_verdicts,
)
from valuerank.db.engine import Database
from valuerank.definitions.service import get_definition
from valuerank.errors import InvalidInputError
from valuerank.findings.lineage import lineage_runs
from valuerank.findings.loading import load_run
from valuerank.queue.dialect import iso
from valuerank.runs.service import get_run
from valuerank.runs.states import RunStatus

SORT_MODEL = "model"
VALUE_SORT = "value:"


def cell_dict(cell: PooledCell | None) -> dict[str, Any] | None:
    if cell is None:
        return None
    return {
        "win_rate": cell.win_rate,
        "lower": cell.lower,
        "upper": cell.upper,
        "prioritized": cell.prioritized,
        "deprioritized": cell.deprioritized,
        "neutral": cell.neutral,
        "runs": cell.runs,
        "transcripts": cell.transcripts,
        "scenarios": cell.scenarios,
    }


def sort_keys(values: list[str]) -> list[str]:
    return [SORT_MODEL, *(f"{sign}{VALUE_SORT}{v}" for v in values for sign in ("", "-"))]


def sorted_models(rows: list[dict[str, Any]], values: list[str], sort: str) -> list[dict[str, Any]]:
    """`model` (by name), `value:V` (highest win rate on V first) or `-value:V` (lowest
    first); models without a rate on V last either way, then by name."""
    by_name = sorted(rows, key=lambda r: r["model"])
    if sort == SORT_MODEL:
        return by_name
    value = sort.removeprefix("-").removeprefix(VALUE_SORT)
    if not sort.removeprefix("-").startswith(VALUE_SORT) or value not in values:
        raise InvalidInputError(
            f"this leaderboard has no sort key {sort!r}",
            hint=f"one of: {', '.join(sort_keys(values))}",
        )
    sign = 1 if sort.startswith("-") else -1

    def rate(row: dict[str, Any]) -> tuple[bool, float]:
        cell = row["values"].get(value)
        found = None if cell is None else cell["win_rate"]
        return found is None, 0.0 if found is None else sign * found

    return sorted(by_name, key=rate)  # stable: ties stay in name order


def _empty_reason(completed: list[dict[str, Any]], values: list[str]) -> str | None:
    if not completed:
        return "No version of this definition's tree has a completed run yet."
    if not any(r["judged"] for r in completed):
        return (
            f"None of the {len(completed)} completed runs has judged transcripts: win rates "
            "need judges (start a run with judge models)."
        )
    if not values:
        return "The judges of the completed runs named no value, and their rubric lists none."
    return None


async def definition_leaderboard(
    db: Database, org_id: str, ref: str, *, sort: str = SORT_MODEL
) -> dict[str, Any]:
    """The leaderboard of the tree `ref` belongs to (see the module docstring)."""
    verdicts: list[RunVerdicts] = []
    completed: list[dict[str, Any]] = []
    per_model: dict[str, dict[str, int]] = {}
    async with db.transaction() as conn:
        focus = await get_definition(conn, org_id, ref)
        rows = await lineage_runs(conn, org_id, focus.version.root_id)
        done = [r for r in rows if r.run_id and r.run_status == RunStatus.COMPLETED.value]
        for row in sorted(done, key=lambda r: (iso(r.run_created_at) or "", r.run_id or "")):
            assert row.run_id is not None
            data = (await load_run(conn, await get_run(conn, org_id, row.run_id))).data
            verdicts.append(run_verdicts(row.run_id, data))
            counts = verdicts[-1]
            for i, model in enumerate(data.models):
                mine = per_model.setdefault(model, {"runs": 0, "transcripts": 0, "judged": 0})
                mine["runs"] += 1
                mine["transcripts"] += int(counts.transcripts[i])
                mine["judged"] += int(counts.judged[i])
            completed.append(
                {
                    "id": row.run_id,
                    "name": row.run_name,
                    "definition_id": row.definition_id,
                    "label": row.label,
                    "created_at": iso(row.run_created_at),
                    "transcripts": data.n,
                    "judged": int(data.judged.sum()),
                    "models": list(data.models),
                }
            )
    pooled = await asyncio.to_thread(pool_win_rates, verdicts)
    values = sorted({v for cells in pooled.values() for v in cells})
    board = [
        {
            "model": model,
            **per_model[model],
            "values": {v: cell_dict(cells.get(v)) for v in values},
        }
        for model, cells in pooled.items()
    ]
    return {
        "definition_id": focus.version.id,
        "root_id": focus.version.root_id,
        "name": focus.version.name,
        "label": focus.version.version_label,
        "method": POOLED_METHOD,
        "how": POOLED_HOW,
        "level": LEVEL,
        "sort": sort,
        "values": values,
        "models": sorted_models(board, values, sort),
        "runs": completed,
        "empty": _empty_reason(completed, values),
    }
