"""A judged run of the demo definition with the default values rubric, for the tests of
people's readings (storage, API, CLI, pages): each model answers every scenario of the run,
and two judges read each answer (a 4 or 5 prioritises Freedom over Loyalty, a 1 or 2 the
reverse; the second judge reads Harmony too on odd scenarios), with their consensus."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import valuerank
from valuerank.consensus import decision_consensus
from valuerank.db import Database
from valuerank.default_rubric import default_rubric_text
from valuerank.definitions.service import import_definition
from valuerank.formats.transcript_md import Transcript, Turn
from valuerank.rubrics import import_rubric
from valuerank.runs.config import RunConfig
from valuerank.runs.records import JudgmentRecord, TranscriptRecord, insert_transcript
from valuerank.runs.service import Run, create_run, run_scenario_ids

DEMO = Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md"
MODELS = ("scripted:utilitarian", "scripted:deontologist")
JUDGES = ("scripted:centrist", "scripted:agreeable")
FREEDOM, LOYALTY, HARMONY = "Freedom", "Loyalty", "Harmony"


@dataclass(frozen=True)
class ReadRun:
    run: Run
    transcript_ids: list[str]
    scenarios: list[str]


def _lists(code: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if code >= 4:
        return (FREEDOM,), (LOYALTY,)
    if code <= 2:
        return (LOYALTY,), (FREEDOM,)
    return (), ()


async def judged_run(db: Database, org_id: str, *, sample_percentage: int = 20) -> ReadRun:
    """The run (with the default rubric) and its transcripts, judged by two judges."""
    async with db.transaction() as conn:
        stored, _ = await import_definition(conn, org_id, DEMO.read_text())
        rubric = await import_rubric(conn, org_id, default_rubric_text(), name="values_rubric")
        config = RunConfig(
            models=MODELS,
            judge_models=JUDGES,
            sample_percentage=sample_percentage,
            sample_seed=0,
        )
        run = (
            await create_run(conn, org_id, stored.version.id, config, rubric_id=rubric.version.id)
        ).run
        scenarios = await run_scenario_ids(conn, run.id)
        ids = []
        for m, model in enumerate(MODELS):
            for s, sid in enumerate(scenarios):
                code = 1 + (s + 3 * m) % 5
                pri, dep = _lists(code)
                second = (*pri, HARMONY) if s % 2 else pri
                judgments = (
                    JudgmentRecord(JUDGES[0], code, pri, dep, 80.0),
                    JudgmentRecord(JUDGES[1], code, second, dep, 70.0),
                )
                consensus = decision_consensus(j.judgement() for j in judgments).to_dict()
                record = TranscriptRecord(
                    transcript=Transcript(
                        run.cli_run_id,
                        sid,
                        model,
                        "demo",
                        (Turn(1, "scenario", "Decide.", f"{model} weighs it. Rating: {code}"),),
                    ),
                    model=model,
                    decision_code=code,
                    synthetic=True,
                    consensus=consensus,
                    judgments=judgments,
                )
                found = await insert_transcript(conn, org_id, run.id, record)
                assert found is not None
                ids.append(found)
    return ReadRun(run, ids, list(scenarios))
