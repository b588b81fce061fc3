"""A run's analysis input read from the database (SQLite and PostgreSQL): the columns, the
input hash that keys the cache — stable for the same rows, changed by anything the analysis
reads, blind to other runs — and the loaded run kept in memory until a writer bumps the run's
inputs_version."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import insert, update

import valuerank
from valuerank.db import Database
from valuerank.db.tables import judgments, runs, transcripts
from valuerank.definitions.service import import_definition
from valuerank.findings.loading import LoadedRun, load_run, read_run
from valuerank.formats.transcript_md import Transcript, Turn
from valuerank.queue.ids import new_id
from valuerank.runs.config import RunConfig
from valuerank.runs.records import (
    JudgmentRecord,
    TranscriptRecord,
    insert_judgment,
    insert_transcript,
)
from valuerank.runs.service import Run, create_run, get_run, run_scenario_ids

DEMO = Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md"
MODELS = ("scripted:utilitarian", "scripted:contrarian")


async def a_run(db: Database, org_id: str, codes: list[int | None]) -> tuple[Run, list[str]]:
    """A run of the demo with a transcript per code (models alternating, scenarios in turn)."""
    async with db.transaction() as conn:
        stored, _ = await import_definition(conn, org_id, DEMO.read_text())
        config = RunConfig(models=MODELS, sample_seed=0)
        run = (await create_run(conn, org_id, stored.version.id, config)).run
        scenario_ids = await run_scenario_ids(conn, run.id)
        ids = []
        for n, code in enumerate(codes):
            model = MODELS[n % 2]
            sid = scenario_ids[(n // 2) % len(scenario_ids)]
            record = TranscriptRecord(
                transcript=Transcript(
                    run_id=run.cli_run_id,
                    scenario_id=sid,
                    target_model=model,
                    subject="loading",
                    turns=(Turn(1, "scenario", "Decide.", f"Rating: {code}"),),
                ),
                model=model,
                sample_index=n // (2 * len(scenario_ids)),
                decision_code=code,
                decision_reason=None if code is not None else "refusal",
                consensus={"prioritized_values": ["Honesty"], "deprioritized_values": []}
                if n % 3 == 0
                else None,
            )
            transcript_id = await insert_transcript(conn, org_id, run.id, record)
            assert transcript_id is not None
            ids.append(transcript_id)
    return run, ids


async def loaded(db: Database, org_id: str, run_id: str) -> LoadedRun:
    async with db.transaction() as conn:
        return await load_run(conn, await get_run(conn, org_id, run_id))


async def read(db: Database, org_id: str, run_id: str) -> LoadedRun:
    """Straight from the database, never kept: what the hash is made of."""
    async with db.transaction() as conn:
        return await read_run(conn, await get_run(conn, org_id, run_id))


async def test_the_columns_are_the_runs_transcripts(db: Database, org_id: str) -> None:
    codes: list[int | None] = [1 + n % 5 for n in range(60)]
    codes[7] = None
    run, _ = await a_run(db, org_id, codes)
    data = (await loaded(db, org_id, run.id)).data
    assert data.n == 60 and data.models == tuple(sorted(MODELS))
    assert sorted(data.decision[data.decided].tolist()) == sorted(
        float(c) for c in codes if c is not None
    )
    assert int(data.judged.sum()) == 20  # every third has a consensus
    honesty = data.values.index("Honesty")
    assert int((data.value_status[:, honesty] == 1).sum()) == 20
    assert int((data.outcome == 1).sum()) == 1  # the refusal


async def test_the_hash_follows_what_the_analysis_reads(db: Database, org_id: str) -> None:
    run, ids = await a_run(db, org_id, [1 + n % 5 for n in range(30)])
    first = await read(db, org_id, run.id)
    assert (await read(db, org_id, run.id)).input_hash == first.input_hash  # stable
    # Another run in the same organisation changes nothing of this one.
    await a_run(db, org_id, [3, 3, 3, 3])
    assert (await read(db, org_id, run.id)).input_hash == first.input_hash
    hashes = {first.input_hash}

    async def changed_by(statement: object) -> None:
        async with db.transaction() as conn:
            await conn.execute(statement)  # type: ignore[call-overload]
        now = (await read(db, org_id, run.id)).input_hash
        assert now not in hashes
        hashes.add(now)

    await changed_by(update(transcripts).where(transcripts.c.id == ids[4]).values(decision_code=2))
    await changed_by(
        update(transcripts)
        .where(transcripts.c.id == ids[5])
        .values(consensus={"prioritized_values": ["Loyalty"], "deprioritized_values": []})
    )
    await changed_by(
        insert(judgments).values(
            id=new_id(),
            org_id=org_id,
            transcript_id=ids[6],
            judge_model="scripted:centrist",
            decision=4,
            prioritized_values=["Honesty"],
            deprioritized_values=[],
            confidence=80.0,
        )
    )
    await changed_by(
        update(judgments).where(judgments.c.transcript_id == ids[6]).values(confidence=81.0)
    )


async def test_a_loaded_run_is_kept_until_a_writer_changes_its_inputs(
    db: Database, org_id: str
) -> None:
    """Pages that compare or pool runs load them again and again: a run is read once, then
    served from memory, until a write through the run's writers (which bump its
    inputs_version) changes what the analysis reads; a change of the run's own row (its name)
    shows without reading its transcripts again. What is kept cannot be written to."""
    run, ids = await a_run(db, org_id, [1 + n % 5 for n in range(12)])
    first = await loaded(db, org_id, run.id)
    again = await loaded(db, org_id, run.id)
    assert again.data is first.data and again.input_hash == first.input_hash
    with pytest.raises(ValueError, match="read-only"):
        first.data.decision[0] = 5.0

    async with db.transaction() as conn:
        await conn.execute(update(runs).where(runs.c.id == run.id).values(name="renamed"))
    renamed = await loaded(db, org_id, run.id)
    assert renamed.run.name == "renamed" and renamed.data is first.data

    async with db.transaction() as conn:
        reading = JudgmentRecord("scripted:centrist", 4, ("Loyalty",), (), 80.0)
        assert await insert_judgment(conn, org_id, ids[1], reading)
    judged = await loaded(db, org_id, run.id)
    assert judged.data is not first.data
    assert judged.input_hash != first.input_hash
    assert judged.input_hash == (await read(db, org_id, run.id)).input_hash
