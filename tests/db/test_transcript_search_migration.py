"""0021_transcript_search fills `search_text` for the transcripts stored before it with the
fold that search uses (so old transcripts are found as new ones are), more than one batch of
them; both ways, on both databases."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import command
from sqlalchemy import Connection

from valuerank.db import Database
from valuerank.db.migrate import alembic_config, current_revision, head_revision, upgrade
from valuerank.runs.searchable import searchable

BEFORE = "0020_analysis_inputs_version"
THIS = "0021_transcript_search"
TEXTS = ["# CAFÉ au lait", "Die Straße", "cafe\u0301 ÉCOLE", "plain ascii TEXT"]
COUNT = 1203  # more than two of the migration's batches of 500


async def test_stored_transcripts_get_their_search_text_and_the_downgrade_works(
    empty_db: Database,
) -> None:
    await upgrade(empty_db, BEFORE)
    rows = [
        {"id": f"t{i:05d}", "scenario": f"s{i}", "content": TEXTS[i % len(TEXTS)]}
        for i in range(COUNT)
    ]
    async with empty_db.transaction() as conn:
        await conn.execute(sa.text("INSERT INTO orgs (id, slug, name) VALUES ('o', 'lab', 'Lab')"))
        await conn.execute(sa.text("INSERT INTO runs (id, org_id) VALUES ('r', 'o')"))
        await conn.execute(
            sa.text(
                "INSERT INTO transcripts (id, org_id, run_id, scenario_id, model, content, turns) "
                "VALUES (:id, 'o', 'r', :scenario, 'm:a', :content, '[]')"
            ),
            rows,
        )
    assert (await upgrade(empty_db, THIS))[1] == THIS
    async with empty_db.transaction() as conn:
        found = await conn.execute(sa.text("SELECT id, search_text FROM transcripts"))
        stored: dict[str, str] = {row.id: row.search_text for row in found}
    assert stored == {r["id"]: searchable(r["content"]) for r in rows}
    assert stored["t00000"] == "# café au lait" and stored["t00001"] == "die strasse"

    def _down(sync_conn: Connection) -> None:
        command.downgrade(alembic_config(sync_conn), BEFORE)

    async with empty_db.transaction(immediate=True) as conn:
        await conn.run_sync(_down)
    assert await current_revision(empty_db) == BEFORE
    async with empty_db.transaction() as conn:
        assert await conn.scalar(sa.text("SELECT count(*) FROM transcripts")) == COUNT
    assert (await upgrade(empty_db))[1] == head_revision()
