"""0010_maintenance adds `kind` and `trigger` to `maintenance_runs` (rows written before it are
the workers' full passes) and the `maintenance_alerts` table; both ways, on both databases."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import command
from sqlalchemy import Connection

from valuerank.db import Database
from valuerank.db.migrate import alembic_config, current_revision, head_revision, upgrade

BEFORE = "0009_analysis"
THIS = "0010_maintenance"


async def _downgrade(db: Database, revision: str) -> None:
    def _down(sync_conn: Connection) -> None:
        command.downgrade(alembic_config(sync_conn), revision)

    async with db.transaction(immediate=True) as conn:
        await conn.run_sync(_down)


async def test_old_passes_become_full_worker_passes_and_the_downgrade_works(
    empty_db: Database,
) -> None:
    await upgrade(empty_db, BEFORE)
    async with empty_db.transaction() as conn:
        await conn.execute(
            sa.text(
                "INSERT INTO maintenance_runs (id, status, actions, started_at, finished_at, "
                "duration_ms) VALUES ('m1', 'succeeded', '{}', CURRENT_TIMESTAMP, "
                "CURRENT_TIMESTAMP, 3)"
            )
        )
    assert (await upgrade(empty_db, THIS))[1] == THIS
    async with empty_db.transaction() as conn:
        row = (await conn.execute(sa.text("SELECT kind, trigger FROM maintenance_runs"))).one()
        assert tuple(row) == ("full", "worker")
        assert await conn.scalar(sa.text("SELECT count(*) FROM maintenance_alerts")) == 0

    await _downgrade(empty_db, BEFORE)
    assert await current_revision(empty_db) == BEFORE
    async with empty_db.transaction() as conn:
        ids = (await conn.execute(sa.text("SELECT id FROM maintenance_runs"))).scalars().all()
    assert ids == ["m1"]
    assert (await upgrade(empty_db))[1] == head_revision()
