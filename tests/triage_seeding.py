"""A run for the transcript-triage tests (API, list functions and pages): nine transcripts of
three models whose answers hold accented and German text in several cases and normal forms,
judged so that every agreement level and both sides of the disagreement flag occur (and two
are not judged), written at known times with ties, so every order needs its tie-breaks."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import update

import valuerank
from valuerank.consensus import decision_consensus
from valuerank.db import Database
from valuerank.db.tables import transcripts
from valuerank.definitions.service import import_definition
from valuerank.formats.transcript_md import Transcript, Turn
from valuerank.runs.config import RunConfig
from valuerank.runs.records import JudgmentRecord, TranscriptRecord, insert_transcript
from valuerank.runs.service import Run, create_run, run_scenario_ids

DEMO = Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md"
U, D, C = "scripted:utilitarian", "scripted:deontologist", "scripted:contrarian"
JUDGES = ("scripted:centrist", "scripted:agreeable")
START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
LONG = "It depends on who is harmed and how badly, and on what the employee owes. " * 4


@dataclass(frozen=True)
class Seed:
    model: str
    scenario: int  # index into the run's scenarios
    answer: str
    decision: int | None
    readings: tuple[tuple[int | None, float], ...]  # (judge's code, confidence) per judge
    minutes: int | None  # written START + minutes; None: the database's clock (now)


SEEDS = (
    Seed(U, 0, "Café first, then the report. Rating: 4", 4, ((4, 80), (4, 80)), 0),  # STRONG
    Seed(U, 1, "CAFÉ AU LAIT, then silence. Rating: 2", 2, ((1, 80), (5, 80)), 5),  # WEAK, split
    # Typed decomposed (e + U+0301, as a Mac keyboard does); written at the same minute.
    Seed(U, 2, "cafe\u0301 talk settles it. Rating: 3", 3, ((3, 90), (4, 50)), 5),  # spread
    Seed(D, 0, "Die Straße ist lang. Rating: 5", 5, ((5, 0), (5, 0)), 10),  # no_data
    Seed(D, 1, "STRASSE, ganz laut. Rating: 1", 1, (), 12),  # not judged
    Seed(D, 2, "ÉCOLE d'abord. Rating: 3", 3, ((3, 80), (4, 80)), 15),  # MODERATE, agreeing
    Seed(C, 0, "l'école est fermée. I decline to rate.", None, (), 15),  # not judged, no code
    Seed(C, 1, LONG + "Rating: 2", 2, ((2, 80), (2, 80)), None),  # STRONG, a long answer
    Seed(C, 2, "Line one\n\n  line\ttwo <b>bold</b> & more. Rating: 4", 4, ((4, 70), (3, 70)), 25),
)


async def seed_triage_run(db: Database, org: str, *, name: str = "triage") -> tuple[Run, list[str]]:
    """The run and its transcripts' ids in SEEDS order."""
    ids: list[str] = []
    async with db.transaction() as conn:
        stored, _ = await import_definition(conn, org, DEMO.read_text(), source_file=DEMO.name)
        created = await create_run(
            conn,
            org,
            stored.version.id,
            RunConfig(models=(U, D, C), judge_models=JUDGES, sample_percentage=25, sample_seed=0),
            name=name,
        )
        run = created.run
        scenarios = await run_scenario_ids(conn, run.id)
        for seed in SEEDS:
            judgments = tuple(
                JudgmentRecord(judge, code, ("Honesty",), ("Loyalty",), confidence)
                for judge, (code, confidence) in zip(JUDGES, seed.readings, strict=False)
            )
            consensus = None
            if judgments:
                consensus = decision_consensus(j.judgement() for j in judgments).to_dict()
            sid = scenarios[seed.scenario]
            transcript = Transcript(
                run_id=run.cli_run_id,
                scenario_id=sid,
                target_model=seed.model,
                subject="demo",
                turns=(Turn(1, "scenario", f"Decide on {sid}.", seed.answer),),
            )
            found = await insert_transcript(
                conn,
                org,
                run.id,
                TranscriptRecord(
                    transcript=transcript,
                    model=seed.model,
                    decision_code=seed.decision,
                    decision_reason=None if seed.decision is not None else "refusal",
                    synthetic=True,
                    consensus=consensus,
                    judgments=judgments,
                ),
            )
            assert found is not None
            ids.append(found)
            if seed.minutes is not None:
                written = START + timedelta(minutes=seed.minutes)
                await conn.execute(
                    update(transcripts).where(transcripts.c.id == found).values(created_at=written)
                )
    return run, ids
