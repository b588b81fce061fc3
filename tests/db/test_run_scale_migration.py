"""0011_run_scale tallies the transcripts and judgments stored before it (the report reads the
tallies from then on) and indexes jobs by (partition, kind, status); both ways, on both
databases."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import command
from sqlalchemy import Connection

from valuerank.db import Database
from valuerank.db.migrate import alembic_config, current_revision, head_revision, upgrade
from valuerank.runs.results import model_results
from valuerank.runs.tallies import Tally, run_tally

BEFORE = "0010_maintenance"
THIS = "0011_run_scale"

# (id, model, decision code, decision reason, cost, synthetic)
TRANSCRIPTS = [
    ("t1", "m:a", 4, "explicit", 0.5, True),
    ("t2", "m:a", 4, "explicit", None, False),
    ("t3", "m:a", None, "refusal", 0.25, False),
    ("t4", "m:b", 2, "explicit", 1.0, False),
]


async def _downgrade(db: Database, revision: str) -> None:
    def _down(sync_conn: Connection) -> None:
        command.downgrade(alembic_config(sync_conn), revision)

    async with db.transaction(immediate=True) as conn:
        await conn.run_sync(_down)


async def test_stored_transcripts_are_tallied_and_the_downgrade_works(
    empty_db: Database,
) -> None:
    await upgrade(empty_db, BEFORE)
    async with empty_db.transaction() as conn:
        await conn.execute(sa.text("INSERT INTO orgs (id, slug, name) VALUES ('o', 'lab', 'Lab')"))
        await conn.execute(sa.text("INSERT INTO runs (id, org_id) VALUES ('r', 'o')"))
        for tid, model, code, reason, cost, synthetic in TRANSCRIPTS:
            await conn.execute(
                sa.text(
                    "INSERT INTO transcripts (id, org_id, run_id, scenario_id, model, content, "
                    "turns, decision_code, decision_reason, cost_usd, synthetic) VALUES "
                    "(:id, 'o', 'r', :id, :model, '', '[]', :code, :reason, :cost, :synthetic)"
                ),
                {
                    "id": tid,
                    "model": model,
                    "code": code,
                    "reason": reason,
                    "cost": cost,
                    "synthetic": synthetic,
                },
            )
        for jid, tid, judge, cost in (("j1", "t1", "x", 0.125), ("j2", "t1", "y", None)):
            await conn.execute(
                sa.text(
                    "INSERT INTO judgments (id, org_id, transcript_id, judge_model, "
                    "prioritized_values, deprioritized_values, confidence, cost_usd) VALUES "
                    "(:id, 'o', :tid, :judge, '[]', '[]', 50, :cost)"
                ),
                {"id": jid, "tid": tid, "judge": judge, "cost": cost},
            )
    assert (await upgrade(empty_db, THIS))[1] == THIS
    async with empty_db.transaction() as conn:
        tallies = await run_tally(conn, "o", "r")
        results = {r.model: r for r in await model_results(conn, "o", "r")}
    assert tallies == [
        Tally("m:a", None, 1, 1, 0, 0.25, 1, 0.0),
        Tally("m:a", 4, 2, 0, 1, 0.5, 1, 0.125),
        Tally("m:b", 2, 1, 0, 0, 1.0, 1, 0.0),
    ]
    assert results["m:a"].cost_usd is None  # one cost unknown
    assert (results["m:a"].decided, results["m:a"].refusals) == (2, 1)

    await _downgrade(empty_db, BEFORE)
    assert await current_revision(empty_db) == BEFORE
    async with empty_db.transaction() as conn:
        assert await conn.scalar(sa.text("SELECT count(*) FROM transcripts")) == 4
    assert (await upgrade(empty_db))[1] == head_revision()
