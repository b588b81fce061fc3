"""Run states and the one table of allowed moves between them.

    pending → running ⇄ paused → summarizing → completed | failed | cancelled

A run is written once per move, by a guarded UPDATE (`WHERE status IN (allowed sources)`), so
two processes racing to move the same run cannot both succeed. Terminal runs may be reopened
(`→ running`) by rerun-failed and expand.
"""

from __future__ import annotations

from enum import StrEnum

from sqlalchemy import func, update
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import runs
from valuerank.errors import ConflictError
from valuerank.refs import short_id


class RunStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    PAUSED = "paused"
    SUMMARIZING = "summarizing"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL


TERMINAL = frozenset({RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED})

# target → the states it may be reached from
ALLOWED_FROM: dict[RunStatus, frozenset[RunStatus]] = {
    RunStatus.RUNNING: frozenset({RunStatus.PENDING, RunStatus.PAUSED, *TERMINAL}),
    RunStatus.PAUSED: frozenset({RunStatus.PENDING, RunStatus.RUNNING, RunStatus.SUMMARIZING}),
    RunStatus.SUMMARIZING: frozenset({RunStatus.RUNNING}),
    RunStatus.COMPLETED: frozenset({RunStatus.RUNNING, RunStatus.SUMMARIZING}),
    RunStatus.FAILED: frozenset({RunStatus.RUNNING, RunStatus.SUMMARIZING}),
    RunStatus.CANCELLED: frozenset(
        {RunStatus.PENDING, RunStatus.RUNNING, RunStatus.PAUSED, RunStatus.SUMMARIZING}
    ),
}


def can_move(source: RunStatus, target: RunStatus) -> bool:
    return source in ALLOWED_FROM[target]


async def move_run(
    conn: AsyncConnection,
    org_id: str,
    run_id: str,
    target: RunStatus,
    *,
    sources: frozenset[RunStatus] | None = None,
    error: str | None = None,
) -> bool:
    """Move a run to `target` if its status is one of `sources` (default: all allowed ones).

    Returns False when the run was in no such state (someone else moved it first).
    """
    allowed = ALLOWED_FROM[target] if sources is None else sources & ALLOWED_FROM[target]
    values: dict[str, object] = {"status": target.value}
    if target is RunStatus.RUNNING:
        values["started_at"] = func.coalesce(runs.c.started_at, func.now())
        values["finished_at"] = None
        values["error"] = None
    if target in TERMINAL:
        values["finished_at"] = func.now()
    if error is not None:
        values["error"] = error
    result = await conn.execute(
        update(runs)
        .where(
            runs.c.org_id == org_id,
            runs.c.id == run_id,
            runs.c.status.in_([s.value for s in allowed]),
        )
        .values(values)
    )
    return bool(result.rowcount)


def refuse(run_id: str, status: RunStatus, action: str) -> ConflictError:
    return ConflictError(
        f"run {short_id(run_id)} is {status.value}: cannot {action}",
        hint="see `valuerank runs status ID` for what the run is doing",
    )
