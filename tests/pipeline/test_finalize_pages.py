"""Finalize works a page of transcripts at a time (SQLite and PostgreSQL): across page
boundaries every transcript gets its judge jobs once and its consensus."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import func, select

import valuerank
from valuerank.db import Database
from valuerank.db.tables import jobs, transcripts
from valuerank.definitions.service import import_definition
from valuerank.formats.transcript_md import Transcript, Turn
from valuerank.pipeline.finalize import enqueue_followers
from valuerank.pipeline.run_results import store_consensus, transcript_pages
from valuerank.runs.config import RunConfig
from valuerank.runs.kinds import JUDGE
from valuerank.runs.records import JudgmentRecord, TranscriptRecord, insert_transcript
from valuerank.runs.service import Run, create_run, run_scenario_ids

DEMO = Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md"
JUDGES = ("scripted:centrist", "scripted:utilitarian")


async def judged_run(db: Database, org_id: str, count: int) -> Run:
    """A run with `count` transcripts, each read by both judges."""
    async with db.transaction() as conn:
        stored, _ = await import_definition(conn, org_id, DEMO.read_text())
        config = RunConfig(models=("scripted:deontologist",), judge_models=JUDGES, sample_seed=0)
        run = (await create_run(conn, org_id, stored.version.id, config)).run
        for n, sid in enumerate((await run_scenario_ids(conn, run.id))[:count]):
            readings = tuple(
                JudgmentRecord(
                    judge_model=judge,
                    decision=1 + (n + j) % 5,
                    prioritized_values=("Honesty",),
                    deprioritized_values=(),
                    confidence=80.0,
                )
                for j, judge in enumerate(JUDGES)
            )
            record = TranscriptRecord(
                transcript=Transcript(
                    run_id=run.cli_run_id,
                    scenario_id=sid,
                    target_model="scripted:deontologist",
                    subject="pages",
                    turns=(Turn(1, "scenario", "Decide.", "Rating: 3"),),
                ),
                model="scripted:deontologist",
                decision_code=3,
                judgments=readings,
            )
            assert await insert_transcript(conn, org_id, run.id, record)
    return run


async def test_pages_cover_every_transcript_once(db: Database, org_id: str) -> None:
    run = await judged_run(db, org_id, 7)
    async with db.transaction() as conn:
        pages = [ids async for ids in transcript_pages(conn, run, page=3)]
        every = set(
            (await conn.execute(select(transcripts.c.id).where(transcripts.c.run_id == run.id)))
            .scalars()
            .all()
        )
    assert [len(ids) for ids in pages] == [3, 3, 1]
    assert [i for ids in pages for i in ids] == sorted(every)


async def test_judges_are_enqueued_once_and_consensus_stored_across_pages(
    db: Database, org_id: str
) -> None:
    run = await judged_run(db, org_id, 7)
    async with db.transaction() as conn:
        assert await enqueue_followers(conn, run, page=3) == 14
        assert await enqueue_followers(conn, run, page=2) == 0  # each job exists once
        judge_jobs = await conn.scalar(
            select(func.count()).where(jobs.c.partition == run.id, jobs.c.kind == JUDGE)
        )
        results = await store_consensus(conn, run, page=3)
        consensus = (
            await conn.execute(
                select(transcripts.c.consensus).where(transcripts.c.run_id == run.id)
            )
        ).scalars()
        stored = [c for c in consensus if c is not None]
    assert judge_jobs == 14
    assert len(stored) == 7 and all(c["consensus"]["total_validations"] == 2 for c in stored)
    assert sum(r.transcripts for r in results) == 7
