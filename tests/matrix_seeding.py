"""A run of the demo definition whose decisions are known, for the matrix and side-by-side
tests (API and pages): three models, two samples each on four scenarios, every decided answer
read by two judges with their consensus stored, as the pipeline leaves a judged run."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncConnection

import valuerank
from valuerank.consensus import decision_consensus
from valuerank.db import Database
from valuerank.definitions.service import import_definition
from valuerank.formats.transcript_md import Transcript, Turn
from valuerank.runs.config import RunConfig
from valuerank.runs.records import JudgmentRecord, TranscriptRecord, insert_transcript
from valuerank.runs.service import Run, create_run, run_scenario_ids

DEMO = Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md"
U, D, C = "scripted:utilitarian", "scripted:deontologist", "scripted:contrarian"
MODELS = (U, D, C)
JUDGES = ("scripted:centrist", "scripted:agreeable")
Codes = list[dict[str, list[int | None]]]
# Per scenario of the run (in its order), each model's decision per sample (None: refused).
CODES: Codes = [
    {U: [5, 5], D: [1, 2], C: [1, 1]},  # split: U high, D and C low; U the odd one out
    {U: [3, 3], D: [3, 4], C: [3, None]},  # close; C refused once
    {U: [2, 2], D: [2, 2], C: [2, 2]},  # all agree
    {U: [4, 5], D: [1, 1], C: [4, 4]},  # D the odd one out
]
# The run's other scenarios have no transcript yet (their rows are empty).


def answer_text(model: str, scenario_id: str, code: int | None) -> str:
    if code is None:
        return f"{model} declines to rate {scenario_id}."
    return f"{model} on {scenario_id}: I weigh it this way. Rating: {code}"


def judge_codes(code: int) -> tuple[int, int]:
    """The two judges' readings: the first agrees; the second reads one lower on a 5."""
    return code, (4 if code == 5 else code)


async def seed_matrix_run(
    db: Database,
    org: str,
    *,
    name: str = "matrix",
    codes: Codes = CODES,
    models: tuple[str, ...] = MODELS,
) -> Run:
    async with db.transaction() as conn:
        stored, _ = await import_definition(conn, org, DEMO.read_text(), source_file=DEMO.name)
        created = await create_run(
            conn,
            org,
            stored.version.id,
            RunConfig(
                models=models,
                judge_models=JUDGES,
                sample_percentage=25,
                sample_seed=0,
                samples_per_scenario=2,
            ),
            name=name,
        )
        run = created.run
        scenario_ids = await run_scenario_ids(conn, run.id)
        assert len(scenario_ids) > len(codes), scenario_ids  # some rows stay empty
        for sid, per_model in zip(scenario_ids, codes, strict=False):
            for model, samples in per_model.items():
                for sample, code in enumerate(samples):
                    await _insert(conn, org, run, sid, model, sample, code)
    return run


async def _insert(
    conn: AsyncConnection, org: str, run: Run, sid: str, model: str, sample: int, code: int | None
) -> None:
    # A refusal is not judged; a decided answer is read by both judges.
    readings = [] if code is None else list(zip(JUDGES, judge_codes(code), strict=True))
    judgments = tuple(
        JudgmentRecord(judge, reading, ("Honesty",), ("Loyalty",), 80.0, rationale=f"{judge} read")
        for judge, reading in readings
    )
    consensus = (
        decision_consensus(j.judgement() for j in judgments).to_dict() if judgments else None
    )
    transcript = Transcript(
        run_id=run.cli_run_id,
        scenario_id=sid,
        target_model=model,
        subject="demo",
        turns=(Turn(1, "scenario", f"Decide on {sid}.", answer_text(model, sid, code)),),
    )
    await insert_transcript(
        conn,
        org,
        run.id,
        TranscriptRecord(
            transcript=transcript,
            model=model,
            sample_index=sample,
            decision_code=code,
            decision_reason=None if code is not None else "refusal",
            synthetic=True,
            consensus=consensus,
            judgments=judgments,
        ),
    )
