"""Analysis end to end on SQLite and PostgreSQL: scripted personas with judges run by a real
in-process worker; the completed run gets its basic analysis from the queue; the figures are
right; the cache serves, a new transcript invalidates it, force recomputes; deep analysis
with a narrative; two runs compared; an experiment with a variant; lineage over a fork."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import select

import valuerank
from valuerank.db import Database
from valuerank.db.tables import analyses, jobs, transcripts
from valuerank.definitions.service import fork_definition, import_definition, parse_and_check
from valuerank.findings.analyses import run_analysis, stored_analysis
from valuerank.findings.comparisons import create_comparison, get_comparison
from valuerank.findings.lineage import lineage_results
from valuerank.formats.transcript_md import Transcript, Turn
from valuerank.pipeline.analyze import enqueue_analysis, enqueue_comparison
from valuerank.pipeline.calls import ProviderPool
from valuerank.pipeline.context import PipelineContext
from valuerank.pipeline.experiments import add_variant, create_experiment, experiment_report
from valuerank.pipeline.handlers import register_pipeline_handlers
from valuerank.pipeline.launch import launch_run, watch_report
from valuerank.queue import QueueSettings, Worker
from valuerank.rubrics import import_rubric
from valuerank.runs.config import RunConfig
from valuerank.runs.records import TranscriptRecord, insert_transcript
from valuerank.runs.service import expand_run, get_run
from valuerank.runs.states import RunStatus

DEMO = Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md"
RUBRIC = Path(__file__).parents[2] / "examples" / "values_rubric.yaml"
FAST = QueueSettings(poll_seconds=0.02, heartbeat_seconds=0.05, retry_base_seconds=0.0)
PERSONAS = (
    "scripted:utilitarian",
    "scripted:contrarian",
    "scripted:deontologist",
    "scripted:refuser",
)
JUDGES = ("scripted:centrist", "scripted:utilitarian")
T = TypeVar("T")


@contextlib.asynccontextmanager
async def _worker(db: Database) -> AsyncIterator[None]:
    worker = Worker(db, settings=FAST, concurrency=4)
    ctx = PipelineContext(db, providers=ProviderPool(environ={}), poll_seconds=0.1)
    register_pipeline_handlers(worker, ctx)
    task = asyncio.create_task(worker.run_forever())
    try:
        yield
    finally:
        worker.stop()
        await task
        await ctx.aclose()


async def _until(probe: Callable[[], Awaitable[T | None]], timeout: float = 90) -> T:
    deadline = time.monotonic() + timeout
    while True:
        found = await probe()
        if found:
            return found
        assert time.monotonic() < deadline, "timed out waiting"
        await asyncio.sleep(0.05)


async def _setup(db: Database, org_id: str) -> str:
    async with db.transaction() as conn:
        await import_rubric(conn, org_id, RUBRIC.read_text(), name="values")
        stored, _ = await import_definition(conn, org_id, DEMO.read_text(), source_file=DEMO.name)
    return stored.version.id


async def _launch(db: Database, org_id: str, definition_id: str, config: RunConfig) -> str:
    async with db.transaction() as conn:
        launched = await launch_run(conn, org_id, definition_id, config, environ={})
    return launched.created.run.id


async def _completed(db: Database, org_id: str, run_id: str) -> None:
    async def done() -> bool:
        report = await watch_report(db, org_id, run_id)
        return report.run.status.terminal

    await _until(done)
    async with db.transaction() as conn:
        assert (await get_run(conn, org_id, run_id)).status is RunStatus.COMPLETED


async def _stored(db: Database, org_id: str, run_id: str, kind: str) -> Any:
    async def found() -> Any:
        async with db.transaction() as conn:
            return await stored_analysis(conn, org_id, run_id, kind)  # type: ignore[arg-type]

    return await _until(found)


def _config(models: tuple[str, ...] = PERSONAS, **extra: Any) -> RunConfig:
    return RunConfig(
        models=models,
        sample_percentage=30,
        sample_seed=0,  # runs to pair sample the same scenarios
        followup_turns=0,
        judge_models=JUDGES,
        **extra,
    )


async def test_a_completed_run_is_analysed_cached_invalidated_and_forced(
    db: Database, org_id: str
) -> None:
    definition_id = await _setup(db, org_id)
    run_id = await _launch(db, org_id, definition_id, _config())
    async with _worker(db):
        await _completed(db, org_id, run_id)
        sampled = await _stored(db, org_id, run_id, "basic")  # by the queue, nobody asked
        assert sampled.result["sample"]["basis"] == "based on 30 % sample: 8 of 27 scenarios"
        fpc = sampled.result["sample"]["finitePopulationCorrection"]
        assert fpc == round((19 / 26) ** 0.5, 6)
        utilitarian_ci = sampled.result["perModel"]["scripted:utilitarian"]["overall"]
        assert utilitarian_ci["confidenceInterval"]["method"] == "t_fpc"
        # Expanding the run to every scenario updates the figures (a new generation).
        async with db.transaction(immediate=True) as conn:
            await expand_run(conn, org_id, run_id, 100)
        await _completed(db, org_id, run_id)

        async def expanded() -> Any:
            async with db.transaction() as conn:
                row = await stored_analysis(conn, org_id, run_id, "basic")
            return row if row is not None and row.input_hash != sampled.input_hash else None

        stored = await _until(expanded)
    analysis = stored.result
    json.dumps(analysis, allow_nan=False)
    assert analysis["sample"]["basis"] == "based on all 27 scenarios"
    assert analysis["sample"]["finitePopulationCorrection"] is None
    per_model = analysis["perModel"]
    assert set(per_model) == set(PERSONAS)
    assert per_model["scripted:refuser"]["refusalRate"] == 1.0
    assert per_model["scripted:refuser"]["overall"]["mean"] is None
    for persona in PERSONAS[:3]:
        assert per_model[persona]["sampleSize"] == per_model[persona]["decided"] == 27
    pair = analysis["modelAgreement"]["pairwise"]["scripted:contrarian:scripted:utilitarian"]
    assert pair["model1"] == "scripted:contrarian" and pair["model2"] == "scripted:utilitarian"
    assert pair["spearmanRho"] < -0.5 and pair["n"] == 27 and pair["significant"]
    rhos = [p["spearmanRho"] for p in analysis["modelAgreement"]["pairwise"].values()]
    assert pair["spearmanRho"] == min(r for r in rhos if r is not None)  # the mirror image
    codes = {w["code"] for w in analysis["warnings"]}
    assert "NO_DECISIONS" in codes and "SAMPLED_RUN" not in codes
    assert "NO_VALUE_JUDGMENTS" not in codes
    assert set(analysis["dimensionAnalysis"]["dimensions"]) == {"Cost", "Harm", "Tenure"}
    # Win rates come from the judges' consensus stored on each transcript.
    async with db.transaction() as conn:
        rows = (
            await conn.execute(
                select(transcripts.c.model, transcripts.c.consensus).where(
                    transcripts.c.run_id == run_id
                )
            )
        ).all()
    utilitarian = [c for m, c in rows if m == "scripted:utilitarian"]
    value, entry = next(iter(per_model["scripted:utilitarian"]["values"].items()))
    expected_p = sum(value in c["prioritized_values"] for c in utilitarian)
    expected_d = sum(value in c["deprioritized_values"] for c in utilitarian)
    assert entry["count"]["prioritized"] == expected_p
    assert entry["count"]["deprioritized"] == expected_d
    assert expected_p + expected_d > 0

    again = await run_analysis(db, org_id, run_id)
    assert again.cached and not again.computed
    assert again.analysis["computedAt"] == analysis["computedAt"]
    assert again.analysis["meta"]["inputHash"] == stored.input_hash

    async with db.transaction() as conn:
        run = await get_run(conn, org_id, run_id)
        record = TranscriptRecord(
            transcript=Transcript(
                run_id=run.cli_run_id,
                scenario_id=analysis["mostContestedScenarios"][0]["scenarioId"],
                target_model="scripted:utilitarian",
                subject="extra",
                turns=(Turn(1, "scenario", "Decide.", "Rating: 5"),),
            ),
            model="scripted:utilitarian",
            sample_index=1,
            decision_code=5,
            synthetic=True,
        )
        assert await insert_transcript(conn, org_id, run_id, record)
    fresh = await run_analysis(db, org_id, run_id)
    assert not fresh.cached and fresh.computed == ["basic"]
    assert fresh.analysis["perModel"]["scripted:utilitarian"]["sampleSize"] == 28
    assert fresh.input_hash != stored.input_hash
    assert (await run_analysis(db, org_id, run_id)).cached
    forced = await run_analysis(db, org_id, run_id, force=True)
    assert not forced.cached and forced.computed == ["basic"]
    assert forced.input_hash == fresh.input_hash


async def test_deep_analysis_with_a_narrative_from_the_queue(db: Database, org_id: str) -> None:
    definition_id = await _setup(db, org_id)
    run_id = await _launch(db, org_id, definition_id, _config())
    async with _worker(db):
        await _completed(db, org_id, run_id)
        async with db.transaction(immediate=True) as conn:
            run = await get_run(conn, org_id, run_id)
            await enqueue_analysis(conn, run, "deep", narrative_model="scripted:centrist")

        async def narrated() -> Any:
            async with db.transaction() as conn:
                row = await stored_analysis(conn, org_id, run_id, "deep")
            return row if row is not None and row.narrative else None

        row = await _until(narrated)
    deep = row.result
    json.dumps(deep, allow_nan=False)
    assert "(synthetic answer from scripted:centrist)" in row.narrative
    assert deep["pca"]["available"] and set(deep["pca"]["coordinates"]) == set(PERSONAS[:3])
    assert deep["agreement"]["krippendorffAlpha"]["coders"] == 4
    assert deep["insights"]
    assert any("scripted:refuser refused 100%" in s for s in deep["insights"])
    served = await run_analysis(db, org_id, run_id, deep=True)
    assert served.cached and served.deep_cached
    assert served.analysis["deep"]["narrative"] == row.narrative


async def test_two_runs_compared_an_experiment_and_lineage_over_a_fork(
    db: Database, org_id: str
) -> None:
    definition_id = await _setup(db, org_id)
    baseline = await _launch(db, org_id, definition_id, _config(PERSONAS[:2]))
    other = await _launch(
        db, org_id, definition_id, _config(("scripted:utilitarian", "scripted:agreeable"))
    )
    fork_text = DEMO.read_text().replace("Give me your judgement", "Tell me your judgement")
    async with db.transaction() as conn:
        fork = await fork_definition(
            conn, org_id, definition_id, definition=parse_and_check(fork_text)
        )
    forked = await _launch(db, org_id, fork.version.id, _config(PERSONAS[:2]))
    async with _worker(db):
        for run_id in (baseline, other, forked):
            await _completed(db, org_id, run_id)
        async with db.transaction(immediate=True) as conn:
            comparison = await create_comparison(conn, org_id, baseline, other, "fdr_bh")
            await enqueue_comparison(conn, org_id, comparison.id, baseline)
            experiment = await create_experiment(
                conn, org_id, name="temperature", hypothesis="none", baseline_run=baseline
            )
            variant = await add_variant(
                conn,
                org_id,
                experiment.id,
                {"models": ["scripted:utilitarian", "scripted:centrist"]},
            )

        async def compared() -> Any:
            async with db.transaction() as conn:
                found = await get_comparison(conn, org_id, comparison.id)
            return found if found.status != "queued" else None

        done = await _until(compared)
        await _completed(db, org_id, variant.run.id)
    assert done.status == "completed" and done.result is not None
    result = done.result
    assert result["models"] == {
        "shared": ["scripted:utilitarian"],
        "baselineOnly": ["scripted:contrarian"],
        "comparisonOnly": ["scripted:agreeable"],
    }
    same = result["perModel"]["scripted:utilitarian"]
    assert same["n"] == 8  # the same persona on the same scenarios: only its noise differs
    assert abs(same["delta"]) < 1 and same["wilcoxon"]["significant"] is False
    assert result["scenarios"]["shared"] == 8

    report = await experiment_report(db, org_id, experiment.id)
    [entry] = report["variants"]
    assert entry["changes"] == {"models": ["scripted:utilitarian", "scripted:centrist"]}
    assert entry["status"] == "completed"
    assert entry["comparison"]["result"]["models"]["comparisonOnly"] == ["scripted:centrist"]
    assert (await experiment_report(db, org_id, experiment.id))["variants"][0]["cached"]

    lineage = await lineage_results(db, org_id, definition_id)
    labels = {v["label"]: v for v in lineage["versions"]}
    assert set(labels) == {"v1", "v1.1"}
    assert {r["id"] for r in labels["v1"]["runs"]} == {baseline, other, variant.run.id}
    assert labels["v1.1"]["representative_run_id"] == forked
    [change] = lineage["changes"]
    assert (change["from_label"], change["to_label"]) == ("v1", "v1.1")
    assert change["diff"]["template"] is not None
    assert any("template changed" in line for line in change["diff_lines"])
    assert change["comparison"]["scenarios"]["shared"] > 0
    assert lineage["aligned"] and all(
        set(row["versions"]) <= {definition_id, fork.version.id} for row in lineage["aligned"]
    )
    async with db.transaction() as conn:
        count = len((await conn.execute(select(analyses.c.id))).all())
        kinds = set((await conn.execute(select(jobs.c.kind))).scalars())
    assert count >= 4  # every completed run got its basic analysis
    assert {"analyze:basic", "analyze:compare"} <= kinds
