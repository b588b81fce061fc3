"""A run's record: what a row of `runs` says, read by its id or a prefix of it.

Reading a run (every status and progress) needs nothing else of the runs package.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import runs
from valuerank.queue.dialect import as_utc
from valuerank.refs import find_by_ref
from valuerank.runs.config import RunConfig
from valuerank.runs.states import RunStatus


@dataclass(frozen=True)
class Run:
    id: str
    org_id: str
    definition_id: str | None
    name: str
    cli_run_id: str
    status: RunStatus
    config: RunConfig
    priority: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    summary: str | None
    error: str | None
    origin: str
    synthetic: bool
    rubric_id: str | None = None

    def summary_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "status": self.status.value,
            "definition_id": self.definition_id,
            "models": list(self.config.models),
            "sample_percentage": self.config.sample_percentage,
            "sample_seed": self.config.sample_seed,
            "phrasings": self.config.phrasings,
            "scale_order": self.config.scale_order,
            "cli_run_id": self.cli_run_id,
            "origin": self.origin,
            "synthetic": self.synthetic,
            "created_at": as_utc(self.created_at).isoformat(),
        }


def run_from_row(row: Any) -> Run:
    return Run(
        id=row.id,
        org_id=row.org_id,
        definition_id=row.definition_id,
        name=row.name,
        cli_run_id=row.cli_run_id,
        status=RunStatus(row.status),
        config=RunConfig.model_validate(row.config),
        priority=row.priority,
        created_at=row.created_at,
        started_at=row.started_at,
        finished_at=row.finished_at,
        summary=row.summary,
        error=row.error,
        origin=row.origin,
        synthetic=row.synthetic,
        rubric_id=row.rubric_id,
    )


# A run by its whole id, built once: every probe job reads its run (a prefix goes the long way).
_RUN_BY_ID = select(runs).where(runs.c.org_id == bindparam("org_id"), runs.c.id == bindparam("id"))


async def get_run(conn: AsyncConnection, org_id: str, ref: str) -> Run:
    row = None
    if "\x00" not in ref:  # PostgreSQL refuses it in any string (find_by_ref says not found)
        row = (await conn.execute(_RUN_BY_ID, {"org_id": org_id, "id": ref})).first()
    if row is None:
        row = await find_by_ref(conn, runs, org_id, ref, kind="run", listing="runs")
    return run_from_row(row)


async def list_runs(conn: AsyncConnection, org_id: str, *, limit: int = 100) -> list[Run]:
    rows = await conn.execute(
        select(runs)
        .where(runs.c.org_id == org_id)
        .order_by(runs.c.created_at.desc(), runs.c.id.desc())  # the API's order too
        .limit(limit)
    )
    return [run_from_row(row) for row in rows]


def new_cli_run_id() -> str:
    """A run id in one of the CLI's forms (YYYYMMDD-HHMMSS-NNNN), unique enough to tell runs
    apart in exported file names."""
    now = datetime.now(UTC)
    return f"{now:%Y%m%d-%H%M%S}-{secrets.randbelow(10_000):04d}"
