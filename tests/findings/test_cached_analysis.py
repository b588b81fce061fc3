"""A cached analysis is served without reading the run's transcripts (issue 20), on SQLite and
PostgreSQL: the run's `inputs_version` is bumped by every write that changes what the analysis
reads, a stored row carries the version it was computed at, and a row whose version is the
run's is served on a few one-row reads. Each kind of write makes the next read recompute, and
a write between the version read and the store never leaves a stale row marked current."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event, func, select, update

import valuerank
from valuerank.analysis import analyze_basic
from valuerank.db import Database
from valuerank.db.tables import runs
from valuerank.definitions.service import import_definition
from valuerank.findings.analyses import (
    BASIC,
    AnalysisOutcome,
    _read,
    _store,
    deep_state,
    run_analysis,
    store_analysis,
    stored_analysis,
)
from valuerank.formats.transcript_md import Transcript, Turn
from valuerank.pipeline.run_results import store_consensus
from valuerank.pipeline.transcript_retention import apply_transcript_retention
from valuerank.runs.config import RunConfig
from valuerank.runs.records import (
    JudgmentRecord,
    TranscriptRecord,
    insert_judgment,
    insert_transcript,
)
from valuerank.runs.service import Run, create_run, expand_run, get_run, run_scenario_ids

DEMO = Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md"
MODELS = ("scripted:utilitarian", "scripted:contrarian")
# What only the full load reads: a cached read must send none of these.
INPUT_TABLES = ("transcripts", "judgments", "run_scenarios", "definitions", "rubrics")


def _record(run: Run, scenario_id: str, model: str, sample: int, code: int) -> TranscriptRecord:
    return TranscriptRecord(
        transcript=Transcript(
            run_id=run.cli_run_id,
            scenario_id=scenario_id,
            target_model=model,
            subject="cached",
            turns=(Turn(1, "scenario", "Decide.", f"Rating: {code}"),),
        ),
        model=model,
        sample_index=sample,
        decision_code=code,
    )


async def _a_run(db: Database, org_id: str, per_model: int = 12) -> tuple[Run, list[str]]:
    """A half-sampled run of the demo with `per_model` transcripts per model."""
    async with db.transaction() as conn:
        stored, _ = await import_definition(conn, org_id, DEMO.read_text())
        config = RunConfig(models=MODELS, sample_seed=0, sample_percentage=50)
        run = (await create_run(conn, org_id, stored.version.id, config)).run
        scenario_ids = await run_scenario_ids(conn, run.id)
        ids = []
        for n in range(per_model * len(MODELS)):
            sid = scenario_ids[(n // 2) % len(scenario_ids)]
            sample = n // (2 * len(scenario_ids))
            record = _record(run, sid, MODELS[n % 2], sample, 1 + n % 5)
            transcript_id = await insert_transcript(conn, org_id, run.id, record)
            assert transcript_id is not None
            ids.append(transcript_id)
    return run, ids


@contextmanager
def statements(db: Database) -> Iterator[list[str]]:
    """The SQL sent on the database's connections while inside."""
    sent: list[str] = []

    def note(*args: Any) -> None:
        sent.append(str(args[2]).lower())

    sync = db.engine.sync_engine
    event.listen(sync, "before_cursor_execute", note)
    try:
        yield sent
    finally:
        event.remove(sync, "before_cursor_execute", note)


def _reads_inputs(sent: list[str]) -> list[str]:
    return [s for s in sent if any(f"from {t}" in s or f"join {t}" in s for t in INPUT_TABLES)]


async def _cached_read(db: Database, org_id: str, run_id: str, deep: bool = False) -> Any:
    """A read that must be served from the cache without touching the run's inputs."""
    with statements(db) as sent:
        outcome = await run_analysis(db, org_id, run_id, deep=deep)
    assert outcome.cached and outcome.computed == []
    assert _reads_inputs(sent) == [], sent
    assert len(sent) <= 6, sent  # the run, its version, the two stored rows
    return outcome


async def _recomputed(db: Database, org_id: str, run_id: str, old_hash: str) -> AnalysisOutcome:
    outcome = await run_analysis(db, org_id, run_id)
    assert not outcome.cached and outcome.computed == [BASIC]
    assert outcome.input_hash != old_hash
    await _cached_read(db, org_id, run_id)  # and the row it stored is current again
    return outcome


async def test_a_cached_read_loads_no_transcript(db: Database, org_id: str) -> None:
    run, _ = await _a_run(db, org_id)
    first = await run_analysis(db, org_id, run.id, deep=True)
    assert not first.cached and first.deep_cached is False
    again = await _cached_read(db, org_id, run.id, deep=True)
    assert again.deep_cached is True
    assert again.input_hash == first.input_hash
    assert again.analysis["meta"]["inputHash"] == first.analysis["meta"]["inputHash"]
    assert again.analysis["deep"] == first.analysis["deep"]
    # The basic read still reports the stored deep analysis as current; so does deep_state.
    basic = await _cached_read(db, org_id, run.id)
    assert basic.current_deep == first.current_deep
    with statements(db) as sent:
        state = await deep_state(db, org_id, run.id)
    assert state.fresh and state.input_hash == first.input_hash and _reads_inputs(sent) == []


async def test_each_write_makes_the_next_read_recompute(
    db: Database, org_id: str, tmp_path: Path
) -> None:
    run, ids = await _a_run(db, org_id)
    current = (await run_analysis(db, org_id, run.id)).input_hash
    await _cached_read(db, org_id, run.id)

    async with db.transaction() as conn:  # a new transcript
        sid = (await run_scenario_ids(conn, run.id))[0]
        assert await insert_transcript(conn, org_id, run.id, _record(run, sid, MODELS[0], 9, 2))
    current = (await _recomputed(db, org_id, run.id, current)).input_hash

    async with db.transaction() as conn:  # a new judgment
        judged = JudgmentRecord("scripted:centrist", 4, ("Honesty",), (), 80.0)
        assert await insert_judgment(conn, org_id, ids[0], judged)
    current = (await _recomputed(db, org_id, run.id, current)).input_hash

    async with db.transaction() as conn:  # the judges' consensus stored (finalize)
        await store_consensus(conn, await get_run(conn, org_id, run.id))
    current = (await _recomputed(db, org_id, run.id, current)).input_hash

    async with db.transaction() as conn:  # the run expanded to all its scenarios
        _, added = await expand_run(conn, org_id, run.id, 100)
    assert added > 0
    current = (await _recomputed(db, org_id, run.id, current)).input_hash

    async with db.transaction() as conn:  # its transcripts purged by the retention
        await conn.execute(
            update(runs)
            .where(runs.c.id == run.id)
            .values(status="completed", finished_at=func.now())
        )
    async with db.transaction() as conn:
        purged = await apply_transcript_retention(
            conn, older_than_days=-1, export_dir=str(tmp_path)
        )  # finished before tomorrow
    assert purged["deleted"] == len(ids) + 1, purged
    outcome = await _recomputed(db, org_id, run.id, current)
    assert outcome.analysis["meta"]["inputHash"] == outcome.input_hash


async def test_a_write_during_a_read_leaves_no_stale_row_current(db: Database, org_id: str) -> None:
    run, _ = await _a_run(db, org_id)
    read = await _read(db, org_id, run.id, (BASIC,))  # version read, inputs loaded
    async with db.transaction() as conn:  # a probe writes before the result is stored
        sid = (await run_scenario_ids(conn, run.id))[1]
        assert await insert_transcript(conn, org_id, run.id, _record(run, sid, MODELS[1], 9, 5))
    assert read.loaded is not None
    await _store(db, read, BASIC, analyze_basic(read.loaded.data))
    # The row computed without the new transcript is behind the run: recomputed, not served.
    after = await run_analysis(db, org_id, run.id)
    assert not after.cached and after.input_hash != read.input_hash
    assert after.analysis["meta"]["inputHash"] == after.input_hash
    await _cached_read(db, org_id, run.id)


async def test_a_row_without_a_version_is_checked_once_then_served(
    db: Database, org_id: str
) -> None:
    run, _ = await _a_run(db, org_id)
    first = await run_analysis(db, org_id, run.id)
    async with db.transaction() as conn:  # as a row stored before migration 0020 is
        row = await stored_analysis(conn, org_id, run.id, BASIC)
        assert row is not None and row.inputs_version is not None
        await store_analysis(conn, org_id, run.id, BASIC, row.input_hash, row.result)
    with statements(db) as sent:
        checked = await run_analysis(db, org_id, run.id)
    # The hash compared the old way, on the inputs this process keeps since the first read.
    assert checked.cached and not _reads_inputs(sent)
    assert checked.input_hash == first.input_hash
    async with db.transaction() as conn:
        version = await conn.scalar(select(runs.c.inputs_version).where(runs.c.id == run.id))
        row = await stored_analysis(conn, org_id, run.id, BASIC)
    assert row is not None and row.inputs_version == version
    await _cached_read(db, org_id, run.id)
