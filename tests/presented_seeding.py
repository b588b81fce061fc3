"""A run of the demo asked in both scale orders and two phrasings, stored through the run's
own writers (run scenarios and transcripts): the seed of the robustness tests of the
analysis service and the analysis page."""

from __future__ import annotations

import re
from pathlib import Path

from sqlalchemy import select

import valuerank
from valuerank.consensus import decision_consensus
from valuerank.db import Database
from valuerank.db.tables import run_scenarios
from valuerank.definitions.presentation import presented_id
from valuerank.definitions.service import import_definition
from valuerank.formats.transcript_md import Transcript, Turn
from valuerank.runs.config import RunConfig
from valuerank.runs.records import (
    JudgmentRecord,
    RunScenario,
    TranscriptRecord,
    insert_run_scenarios,
    insert_transcript,
)
from valuerank.runs.service import Run, create_run

DEMO = Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md"
MODEL = "scripted:utilitarian"


def reworded(scenario_id: str) -> str:
    """The id of the second phrasing of the scenario's Harm level."""
    return re.sub(r"(_Harm\d)", r"\1o2", scenario_id, count=1)


async def presented_run(db: Database, org_id: str) -> tuple[Run, list[str]]:
    """The demo's scenarios, each also reversed and reworded (as written): as written the
    model answers 4; reversed (mapped back) 3 on even scenarios, 4 on odd ones; reworded 5 on
    every third scenario, 4 on the others."""
    async with db.transaction() as conn:
        stored, _ = await import_definition(conn, org_id, DEMO.read_text())
        run = (await create_run(conn, org_id, stored.version.id, RunConfig(models=(MODEL,)))).run
        rows = (
            await conn.execute(
                select(
                    run_scenarios.c.scenario_id,
                    run_scenarios.c.content,
                    run_scenarios.c.dimension_scores,
                )
                .where(run_scenarios.c.run_id == run.id)
                .order_by(run_scenarios.c.position)
            )
        ).all()
        base = [row.scenario_id for row in rows]
        extra = [
            RunScenario(sid, len(base) + k, dict(row.content), dict(row.dimension_scores))
            for k, (row, sid) in enumerate(
                (row, new)
                for row in rows
                for new in (presented_id(row.scenario_id, "reversed"), reworded(row.scenario_id))
            )
        ]
        assert await insert_run_scenarios(conn, org_id, run.id, extra) == 2 * len(base)
        answers = []
        for j, sid in enumerate(base):
            answers += [(sid, 4), (presented_id(sid, "reversed"), 3 if j % 2 == 0 else 4)]
            answers.append((reworded(sid), 5 if j % 3 == 0 else 4))
        for sid, code in answers:
            judged = (
                JudgmentRecord(
                    "scripted:centrist",
                    code,
                    ("Physical_Safety" if code >= 4 else "Economics",),
                    ("Economics" if code >= 4 else "Loyalty",),
                    80.0,
                ),
            )
            record = TranscriptRecord(
                transcript=Transcript(
                    run_id=run.cli_run_id,
                    scenario_id=sid,
                    target_model=MODEL,
                    subject="presented",
                    turns=(Turn(1, "scenario", "Decide.", f"Rating: {code}"),),
                ),
                model=MODEL,
                sample_index=0,
                decision_code=code,
                decision_reason=None,
                # A judge's reading: the high end of the scale protects people.
                judgments=judged,
                consensus=decision_consensus(j.judgement() for j in judged).to_dict(),
            )
            assert await insert_transcript(conn, org_id, run.id, record) is not None
    return run, base
