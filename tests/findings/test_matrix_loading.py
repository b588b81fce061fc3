"""The matrix read from the database is kept while its runs' inputs are unchanged."""

from __future__ import annotations

import pytest
from sqlalchemy import update
from tests.findings.test_loading import MODELS, a_run

from valuerank.db import Database
from valuerank.db.tables import runs
from valuerank.findings.matrix_loading import LoadedMatrix, load_matrix, read_matrix
from valuerank.formats.transcript_md import Transcript, Turn
from valuerank.runs.records import TranscriptRecord, insert_transcript
from valuerank.runs.service import get_run

pytestmark = pytest.mark.asyncio


async def matrix(db: Database, org_id: str, run_id: str, **kw: object) -> LoadedMatrix:
    async with db.transaction() as conn:
        return await load_matrix(conn, org_id, run_id, **kw)  # type: ignore[arg-type]


async def test_a_matrix_is_kept_until_a_writer_changes_its_runs_inputs(
    db: Database, org_id: str
) -> None:
    """The matrix page is read again and again (sorted, filtered, paged): the matrix is built
    once, its figures over every row computed once, until a write through the run's writers
    changes a decision; a renamed run shows without building it again; another basis or
    threshold is another matrix."""
    run, _ = await a_run(db, org_id, [1 + n % 5 for n in range(12)])
    first = await matrix(db, org_id, run.id)
    again = await matrix(db, org_id, run.id)
    assert again.matrix is first.matrix
    assert again.matrix.column_means() == first.matrix.column_means()
    assert (await matrix(db, org_id, run.id, threshold=2.0)).matrix is not first.matrix
    assert (await matrix(db, org_id, run.id, basis="judges")).matrix is not first.matrix

    async with db.transaction() as conn:
        await conn.execute(update(runs).where(runs.c.id == run.id).values(name="renamed"))
    renamed = await matrix(db, org_id, run.id)
    assert renamed.runs[0].name == "renamed" and renamed.matrix is first.matrix

    row = first.matrix.rows[0]
    async with db.transaction() as conn:
        record = TranscriptRecord(
            transcript=Transcript(
                run_id=run.cli_run_id,
                scenario_id=row.scenario.scenario_id,
                target_model=MODELS[0],
                subject="loading",
                turns=(Turn(1, "scenario", "Decide.", "Rating: 5"),),
            ),
            model=MODELS[0],
            sample_index=7,
            decision_code=5,
        )
        assert await insert_transcript(conn, org_id, run.id, record)
    changed = await matrix(db, org_id, run.id)
    assert changed.matrix is not first.matrix
    cell = next(r for r in changed.matrix.rows if r.scenario == row.scenario).cells[0]
    assert cell.n == row.cells[0].n + 1 and cell.counts[4] == row.cells[0].counts[4] + 1
    async with db.transaction() as conn:
        current = (await get_run(conn, org_id, run.id),)
        fresh = await read_matrix(conn, org_id, current, "model", 1.0)
    assert fresh.matrix == changed.matrix
