"""Shared builders for the exchange tests: ZIPs, transcripts, a run created here."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from sqlalchemy import func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.consensus import Judgement, decision_consensus
from valuerank.db.tables import judgments, run_scenarios, runs, transcripts
from valuerank.definitions.expansion import expand_with_scores
from valuerank.definitions.service import import_definition
from valuerank.formats import Transcript, Turn, serialize_transcript
from valuerank.queue.ids import new_id
from valuerank.rubrics import import_rubric
from valuerank.runs.config import RunConfig
from valuerank.runs.records import (
    NewRun,
    RunScenario,
    TranscriptRecord,
    insert_run,
    insert_run_scenarios,
    insert_transcript,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "cli"
FIXTURE_RUN = FIXTURES / "runs" / "2025-03-02.14-05"
DEFINITION_MD = FIXTURES / "definitions" / "exp-Demo_Whistleblower_Loyalty_Honesty.md"
RUBRIC_YAML = FIXTURES / "config" / "values_rubric.yaml"


def unzip(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def make_zip(entries: list[tuple[str | zipfile.ZipInfo, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries:
            archive.writestr(name, data)
    return buffer.getvalue()


def transcript_text(
    run_id: str,
    scenario_id: str,
    model: str,
    answer: str,
    *,
    sample_index: int | None = None,
    probe: str = "Give me your judgement on a scale of 1 to 5.",
) -> str:
    extra = () if sample_index is None else (("sample_index", sample_index),)
    return serialize_transcript(
        Transcript(
            run_id=run_id,
            scenario_id=scenario_id,
            target_model=model,
            subject=f"Subject of {scenario_id}",
            turns=(Turn(1, "scenario_prompt", probe, answer),),
            probe_model="static",
            timestamp=run_id,
            extra_front_matter=extra,
        )
    )


async def counts(conn: AsyncConnection) -> dict[str, int]:
    found = {}
    for table in (runs, run_scenarios, transcripts):
        found[table.name] = int(await conn.scalar(select(func.count()).select_from(table)) or 0)
    return found


async def create_run(conn: AsyncConnection, org_id: str) -> str:
    """A run as the pipeline leaves it: definition, rubric, samples, judgments, consensus."""
    stored, _ = await import_definition(conn, org_id, DEFINITION_MD.read_text("utf-8"))
    rubric = await import_rubric(conn, org_id, RUBRIC_YAML.read_text("utf-8"), name="values")
    expansion = expand_with_scores(stored.definition)
    models = ("openai:gpt-4.1", "anthropic:claude-3.5-haiku")
    config = RunConfig(
        models=models,
        samples_per_scenario=2,
        temperature=0.7,
        followup_turns=0,
        preamble="Think about values.\n",
        judge_models=("openai:gpt-4.1-mini", "anthropic:claude-3.5-haiku"),
    )
    run_id = await insert_run(
        conn,
        org_id,
        NewRun(
            stored.version.id, config.to_json(), name="whistle run", rubric_id=rubric.version.id
        ),
    )
    scenarios = expansion.scenarios[:2]
    await insert_run_scenarios(
        conn,
        org_id,
        run_id,
        [
            RunScenario(s.id, i, s.to_mapping(), expansion.dimension_scores[s.id])
            for i, s in enumerate(scenarios)
        ],
    )
    for scenario in scenarios:
        for model in models:
            for sample in (0, 1):
                text = transcript_text(
                    "pipeline-run",  # whatever the probe writes: the export folder decides
                    scenario.id,
                    model,
                    f"Rating: {2 + sample}\n\nBecause honesty matters.",
                    sample_index=sample or None,
                    probe=scenario.body,
                )
                tid = await insert_transcript(
                    conn,
                    org_id,
                    run_id,
                    TranscriptRecord(
                        transcript=Transcript(
                            run_id="pipeline-run",
                            scenario_id=scenario.id,
                            target_model=model,
                            subject=f"Subject of {scenario.id}",
                            turns=(Turn(1, "scenario_prompt", scenario.body, "x"),),
                        ),
                        model=model,
                        sample_index=sample,
                        input_tokens=120,
                        output_tokens=40 + sample,
                        latency_ms=12.5,
                        cost_usd=0.0012,
                        finish_reason="stop",
                        decision_code=2 + sample,
                        # As the probe reads it (the import reads it again the same way).
                        decision_reason=f'explicit rating "Rating: {2 + sample}"',
                        content=text,
                    ),
                )
                assert tid is not None
                await conn.execute(
                    update(transcripts)
                    .where(transcripts.c.id == tid)
                    .values(
                        rationale="Puts honesty, first; loyalty second.",
                        consensus=decision_consensus(
                            [Judgement("openai:gpt-4.1-mini", decision=2 + sample, confidence=90)]
                        ).to_dict(),
                    )
                )
                await conn.execute(
                    insert(judgments).values(
                        id=new_id(),
                        org_id=org_id,
                        transcript_id=tid,
                        judge_model="openai:gpt-4.1-mini",
                        decision=2 + sample,
                        prioritized_values=["Honesty"],
                        deprioritized_values=["Loyalty"],
                        confidence=80.0,
                        rationale="clear",
                    )
                )
    await conn.execute(update(runs).where(runs.c.id == run_id).values(status="completed"))
    return run_id
