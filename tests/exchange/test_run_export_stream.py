"""A run larger than one batch streams into its ZIP in export order: the run's scenarios by
rank, ids by code point whatever the collation, the run's models first, then the others;
summary.csv and results.jsonl follow the same order; on both backends."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path

from sqlalchemy import select

from valuerank.db import Database
from valuerank.db.tables import run_scenarios, transcripts
from valuerank.exchange import export_run, write_run_zip
from valuerank.exchange.naming import transcript_export_name
from valuerank.exchange.run_data import BATCH, load_run
from valuerank.formats import Transcript, Turn
from valuerank.runs.records import TranscriptRecord, insert_transcript

from .helpers import create_run, transcript_text

# Punctuation and case that locale collations order differently from code points.
SCENARIOS = ["a-b", "a_b", "aB", "Ab", "a b", "a.b", "ä", "z"]
MODELS = ["openai:gpt-4.1", "anthropic:claude-3.5-haiku", "x:Extra", "x:extra", "x:e-x"]


async def test_a_run_of_several_batches_streams_in_export_order(
    db: Database, org_id: str, tmp_path: Path
) -> None:
    async with db.transaction(immediate=True) as conn:
        run_id = await create_run(conn, org_id)  # 2 ranked scenarios, 2 listed models
        for scenario in SCENARIOS:
            for model in MODELS:
                for sample in range(16):
                    text = transcript_text("r", scenario, model, "Rating: 3", sample_index=sample)
                    record = TranscriptRecord(
                        transcript=Transcript(
                            run_id="r",
                            scenario_id=scenario,
                            target_model=model,
                            subject="s",
                            turns=(Turn(1, "scenario_prompt", "p", "Rating: 3"),),
                        ),
                        model=model,
                        sample_index=sample,
                        decision_code=3,
                        content=text,
                    )
                    assert await insert_transcript(conn, org_id, run_id, record)
    async with db.transaction() as conn:
        ranked = [
            sid
            for (sid,) in await conn.execute(
                select(run_scenarios.c.scenario_id)
                .where(run_scenarios.c.run_id == run_id)
                .order_by(run_scenarios.c.position)
            )
        ]
        rows = (
            await conn.execute(
                select(
                    transcripts.c.scenario_id, transcripts.c.model, transcripts.c.sample_index
                ).where(transcripts.c.run_id == run_id)
            )
        ).all()
        listed = ["openai:gpt-4.1", "anthropic:claude-3.5-haiku"]
        run = await load_run(conn, org_id, run_id)
        with (tmp_path / "run.zip").open("wb") as out:
            written = await write_run_zip(conn, org_id, run, out)
        in_memory = await export_run(conn, org_id, run_id)
    assert len(rows) > BATCH and written.transcripts == len(rows)
    assert (tmp_path / "run.zip").read_bytes() == in_memory

    def key(row: tuple[str, str, int]) -> tuple[int, str, int, str, int]:
        scenario, model, sample = row
        rank = ranked.index(scenario) if scenario in ranked else len(ranked)
        model_rank = listed.index(model) if model in listed else len(listed)
        return (rank, scenario, model_rank, model, sample)

    expected = [
        f"transcripts/{transcript_export_name(s, m, 'static', k, written.run_id)}"
        for s, m, k in sorted((tuple(r) for r in rows), key=key)
    ]
    with zipfile.ZipFile(io.BytesIO(in_memory)) as archive:
        names = archive.namelist()
        summary = list(csv.reader(io.StringIO(archive.read("summary.csv").decode())))
        results = [json.loads(line) for line in archive.read("results.jsonl").splitlines()]
        manifest = archive.read("run_manifest.yaml").decode()
    assert [n for n in names if n.startswith("transcripts/")] == expected
    assert names[-2:] == ["summary.csv", "results.jsonl"]
    assert [f"transcripts/{r['file']}" for r in results] == expected
    assert [(r[1], r[2], int(r[3])) for r in summary[1:]] == [
        (r["scenario_id"], r["model"], r["sample_index"]) for r in results
    ]
    # The models the run does not list follow its own, in the order they are first exported.
    order = [manifest.index(f"true_model: {m}") for m in [*listed, "x:Extra", "x:e-x", "x:extra"]]
    assert order == sorted(order)
