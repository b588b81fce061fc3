"""A sampled run exported and imported again keeps what its figures rest on (issue 31 § 4):
the definition's scenario count is the population, the run's scenarios the sample, so the
import says SAMPLED_RUN with the same basis and the same intervals as the original."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import valuerank
from valuerank.analysis import analyze_basic
from valuerank.db import Database
from valuerank.definitions.service import import_definition
from valuerank.exchange import export_run, import_zip_bytes
from valuerank.findings.loading import read_run
from valuerank.formats.transcript_md import Transcript, Turn
from valuerank.orgs import ensure_org
from valuerank.runs.config import RunConfig
from valuerank.runs.records import TranscriptRecord, insert_transcript
from valuerank.runs.service import create_run, get_run, run_scenario_ids

DEMO = Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md"
MODELS = ("scripted:utilitarian", "scripted:contrarian")


def _record(cli_run_id: str, sid: str, model: str, sample: int, code: int) -> TranscriptRecord:
    return TranscriptRecord(
        transcript=Transcript(
            run_id=cli_run_id,
            scenario_id=sid,
            target_model=model,
            subject="sampled",
            turns=(Turn(1, "scenario", "Decide on a scale of 1 to 5.", f"Rating: {code}"),),
        ),
        model=model,
        sample_index=sample,
        decision_code=code,
    )


async def _analysis(db: Database, org_id: str, run_id: str) -> dict[str, Any]:
    async with db.transaction() as conn:
        run = await get_run(conn, org_id, run_id)
        loaded = await read_run(conn, run)
    return analyze_basic(loaded.data)


async def test_an_imported_sample_keeps_its_basis_and_intervals(db: Database, org_id: str) -> None:
    async with db.transaction() as conn:
        stored, _ = await import_definition(conn, org_id, DEMO.read_text())
        config = RunConfig(models=MODELS, sample_seed=0, sample_percentage=30)
        created = await create_run(conn, org_id, stored.version.id, config)
        run = created.run
        scenario_ids = await run_scenario_ids(conn, run.id)
        # two samples per scenario, so the finite-population correction applies; the
        # second model skips the last scenario, so its own basis is one scenario smaller
        for k, sid in enumerate(scenario_ids):
            for sample in range(2):
                await insert_transcript(
                    conn, org_id, run.id, _record(run.cli_run_id, sid, MODELS[0], sample, 1 + k % 5)
                )
                if k < len(scenario_ids) - 1:
                    code = 1 + (k * 3 + sample) % 5
                    await insert_transcript(
                        conn, org_id, run.id, _record(run.cli_run_id, sid, MODELS[1], sample, code)
                    )
        data = await export_run(conn, org_id, run.id)
        other = await ensure_org(conn, "importer")
        [imported] = await import_zip_bytes(conn, other, data)
    assert imported.created and created.total_scenarios > len(scenario_ids)
    original = await _analysis(db, org_id, run.id)
    again = await _analysis(db, other, imported.id)
    total = created.total_scenarios
    assert original["sample"]["totalScenarios"] == total
    assert again["sample"] == original["sample"]
    assert again["sample"]["basis"] == (
        f"based on 30 % sample: {len(scenario_ids)} of {total} scenarios"
    )
    assert "SAMPLED_RUN" in {w["code"] for w in again["warnings"]}
    for model in MODELS:
        assert again["perModel"][model] == original["perModel"][model]
    # each model's interval rests on the scenarios it decided: the model that skipped one
    # has a larger between-scenario weight than the run's
