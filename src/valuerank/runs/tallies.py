"""A run's tallies: what its status and results read instead of its transcripts.

`run_tallies` holds one row per (run, model, decision code): how many transcripts, refusals
and synthetic ones, the sum and count of the known costs, and the judges' costs. The
statement writing a transcript or a judgment (`runs/records.py`) moves its row in the same
transaction, so a tally is exactly what is stored (a write rolled back takes its tally with
it; a transcript that already existed adds nothing), and a run's report reads a few rows
per model whether the run has 1,000 transcripts or 100,000. Rows go with their run (ON
DELETE CASCADE). A transcript without a decision is tallied under code 0 (codes are 1–5).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.compiled import CompiledOnce
from valuerank.db.tables import run_tallies, transcripts

NO_DECISION = 0
REFUSAL = "refusal"  # the decision reason of a refusal (scoring/decision.py)
_KEY = ("run_id", "model", "decision_code")
_SUMS = ("transcripts", "refusals", "synthetic", "cost_usd", "costs_known", "judge_cost_usd")


@dataclass(frozen=True)
class Tally:
    """A run's transcripts of one model with one decision code (None: no decision)."""

    model: str
    decision_code: int | None
    transcripts: int
    refusals: int
    synthetic: int
    cost_usd: float  # the sum of the known costs
    costs_known: int  # transcripts whose cost is known
    judge_cost_usd: float = 0.0


async def add_transcript(
    conn: AsyncConnection,
    org_id: str,
    run_id: str,
    *,
    model: str,
    decision_code: int | None,
    decision_reason: str | None,
    cost_usd: float | None,
    synthetic: bool,
) -> None:
    """Count a transcript just written (in its transaction)."""
    values = {
        "org_id": org_id,
        "run_id": run_id,
        "model": model,
        "decision_code": NO_DECISION if decision_code is None else decision_code,
        "transcripts": 1,
        "refusals": int(decision_reason == REFUSAL),
        "synthetic": int(synthetic),
        "cost_usd": 0.0 if cost_usd is None else cost_usd,
        "costs_known": int(cost_usd is not None),
        "judge_cost_usd": 0.0,
    }
    await _TALLY_UPSERT.execute(conn, values)


def _tally_upsert(insert: Any) -> Any:
    """The tally's INSERT … ON CONFLICT DO UPDATE, adding the row to the sums."""
    statement = insert(run_tallies)
    return statement.on_conflict_do_update(
        index_elements=list(_KEY),
        set_={c: run_tallies.c[c] + statement.excluded[c] for c in _SUMS},
    )


# Compiled once: every transcript written runs it.
_TALLY_UPSERT = CompiledOnce(_tally_upsert)


async def add_judge_cost(conn: AsyncConnection, transcript_id: str, cost_usd: float) -> None:
    """Add the cost of a judgment just written (in its transaction) to its transcript's tally."""
    t = transcripts.c
    row = (
        await conn.execute(select(t.run_id, t.model, t.decision_code).where(t.id == transcript_id))
    ).first()
    if row is None:
        return
    code = NO_DECISION if row.decision_code is None else row.decision_code
    await conn.execute(
        update(run_tallies)
        .where(
            run_tallies.c.run_id == row.run_id,
            run_tallies.c.model == row.model,
            run_tallies.c.decision_code == code,
        )
        .values(judge_cost_usd=run_tallies.c.judge_cost_usd + cost_usd)
    )


async def run_tally(conn: AsyncConnection, org_id: str, run_id: str) -> list[Tally]:
    """The run's tallies, by model and decision code."""
    return (await tallies_of_runs(conn, org_id, [run_id])).get(run_id, [])


async def tallies_of_runs(
    conn: AsyncConnection, org_id: str, run_ids: Sequence[str]
) -> dict[str, list[Tally]]:
    """Each run's tallies, by model and decision code, in one query (a page of runs)."""
    c = run_tallies.c
    rows = await conn.execute(
        select(run_tallies)
        .where(c.org_id == org_id, c.run_id.in_(list(run_ids)))
        .order_by(c.run_id, c.model, c.decision_code)
    )
    found: dict[str, list[Tally]] = {}
    for r in rows:
        found.setdefault(str(r.run_id), []).append(
            Tally(
                model=str(r.model),
                decision_code=None if r.decision_code == NO_DECISION else int(r.decision_code),
                transcripts=int(r.transcripts),
                refusals=int(r.refusals),
                synthetic=int(r.synthetic),
                cost_usd=float(r.cost_usd),
                costs_known=int(r.costs_known),
                judge_cost_usd=float(r.judge_cost_usd),
            )
        )
    return found


__all__ = ["NO_DECISION", "REFUSAL", "Tally", "add_judge_cost", "add_transcript", "run_tally"]
