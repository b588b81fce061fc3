"""Whole runs on SQLite and PostgreSQL with scripted models and real workers:
create → run → pause → resume → judge → complete, exactly one transcript per item."""

from __future__ import annotations

import asyncio
import contextlib
import io
import tempfile
import zipfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml
from sqlalchemy import func, select
from tests.waiting import run_report_when

import valuerank
from valuerank.db import Database
from valuerank.db.tables import jobs, judgments, runs, transcripts
from valuerank.definitions.service import import_definition
from valuerank.errors import ValueRankError
from valuerank.exchange import export_run, import_runs
from valuerank.formats import parse_transcript
from valuerank.orgs import ensure_org
from valuerank.pipeline.calls import ProviderPool
from valuerank.pipeline.context import PipelineContext
from valuerank.pipeline.handlers import register_pipeline_handlers
from valuerank.pipeline.launch import launch_run
from valuerank.queue import QueueSettings, Worker, events_after
from valuerank.runs import service
from valuerank.runs.config import RunConfig
from valuerank.runs.progress import RunReport, read_report
from valuerank.runs.results import model_results
from valuerank.runs.states import RunStatus
from valuerank.shapes import dump

DEMO = Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md"
# Quick polls and immediate retries; everything else as in production.
FAST = QueueSettings(poll_seconds=0.02, heartbeat_seconds=0.05, retry_base_seconds=0.0)


async def _definition(db: Database, org_id: str) -> str:
    async with db.transaction() as conn:
        stored, _ = await import_definition(conn, org_id, DEMO.read_text(), source_file=DEMO.name)
    return stored.version.id


@contextlib.asynccontextmanager
async def _worker(db: Database, concurrency: int = 4) -> AsyncIterator[Worker]:
    worker = Worker(db, settings=FAST, concurrency=concurrency)
    ctx = PipelineContext(db, providers=ProviderPool(environ={}), poll_seconds=0.1)
    register_pipeline_handlers(worker, ctx)
    task = asyncio.create_task(worker.run_forever())
    try:
        yield worker
    finally:
        worker.stop()
        await task
        await ctx.aclose()


async def _report(db: Database, org_id: str, run_id: str) -> RunReport:
    return await read_report(db, org_id, run_id)


async def _launch(db: Database, org_id: str, config: RunConfig) -> str:
    definition_id = await _definition(db, org_id)
    async with db.transaction() as conn:
        launched = await launch_run(conn, org_id, definition_id, config, environ={})
    return launched.created.run.id


async def test_a_run_completes_with_judges_consensus_and_summaries(
    db: Database, org_id: str
) -> None:
    config = RunConfig(
        models=("scripted:utilitarian", "scripted:deontologist", "scripted:refuser"),
        sample_percentage=20,
        sample_seed=0,
        followup_turns=1,
        # Judges read the transcripts: one literally, one with the scale upside down.
        judge_models=("scripted:deontologist", "scripted:contrarian"),
        summary_model="scripted:centrist",
    )
    run_id = await _launch(db, org_id, config)
    async with _worker(db):
        report = await run_report_when(db, org_id, run_id)
    assert report.run.status is RunStatus.COMPLETED, dump(report)
    assert dump(report.progress) == {
        "total": 15,
        "queued": 0,
        "running": 0,
        "completed": 15,
        "failed": 0,
        "cancelled": 0,
    }
    assert report.judging.completed == 15 * 2 + 15  # two judges and one rationale each
    async with db.transaction() as conn:
        rows = (await conn.execute(select(transcripts).where(transcripts.c.run_id == run_id))).all()
        judged = (
            await conn.execute(
                select(func.count())
                .select_from(judgments.join(transcripts))
                .where(transcripts.c.run_id == run_id)
            )
        ).scalar_one()
        results = {r.model: r for r in await model_results(conn, org_id, run_id)}
        summary = (
            await conn.execute(select(runs.c.summary).where(runs.c.id == run_id))
        ).scalar_one()
    assert len(rows) == 15 and judged == 30
    for row in rows:
        parsed = parse_transcript(row.content)  # verbatim CLI markdown
        assert [t.label for t in parsed.turns] == ["scenario_prompt", "ranked_list"]
        assert parsed.target_model == row.model and row.synthetic
        assert row.rationale and row.consensus["consensus"]["agreement_level"] in (
            "STRONG",
            "MODERATE",
            "WEAK",
        )
        assert len(row.turns) == 2 and "input_tokens" in row.turns[0]
    # The judges read each transcript themselves: they agree where the Target chose the middle
    # of the scale (mirrored, 3 is 3) or refused (both read no decision), and disagree
    # everywhere else; the consensus says so.
    disagreements = 0
    for row in rows:
        verdict = row.consensus["consensus"]
        level, reasons = verdict["agreement_level"], verdict["disagreement_reasons"]
        if row.decision_code in (None, 3):
            # Same reading: both votes validated (their confidences may still differ a lot).
            assert level == "STRONG" and "conflicting_outcomes" not in reasons, verdict
        else:
            assert verdict["model_disagreement"] and level in ("MODERATE", "WEAK"), verdict
            assert {"conflicting_outcomes", "low_consensus"} & set(reasons), verdict
            disagreements += 1
    assert disagreements > 0
    assert results["scripted:refuser"].decided == 0
    assert results["scripted:refuser"].refusals == 5
    assert results["scripted:utilitarian"].decided == 5
    assert (
        results["scripted:utilitarian"].mean_decision
        != results["scripted:deontologist"].mean_decision
    )
    assert summary and "scripted:utilitarian" in summary
    async with db.transaction() as conn:
        events = await events_after(conn, run_id, 0, limit=10_000)
    completes = [e for e in events if e.type == "task_complete" and e.data.get("kind") == "probe"]
    assert len(completes) == 15
    assert {"scenario_id", "model", "progress"} <= set(completes[-1].data)
    assert all("/" in e.data["progress"] for e in completes)


async def test_pause_holds_the_run_and_resume_finishes_it(db: Database, org_id: str) -> None:
    config = RunConfig(
        models=("scripted:utilitarian?latency_ms=30", "scripted:deontologist?latency_ms=30"),
        sample_percentage=40,
        sample_seed=0,
        followup_turns=0,
    )
    run_id = await _launch(db, org_id, config)
    async with _worker(db, concurrency=2):
        await run_report_when(
            db, org_id, run_id, lambda r: r.progress.completed >= 3, what="3 jobs completed"
        )
        async with db.transaction(immediate=True) as conn:
            await service.pause_run(conn, org_id, run_id)
        paused = await run_report_when(
            db, org_id, run_id, lambda r: r.progress.running == 0, what="no job running"
        )
        await asyncio.sleep(0.5)
        still = await _report(db, org_id, run_id)
        assert still.run.status is RunStatus.PAUSED
        assert still.progress.completed == paused.progress.completed  # nothing new started
        assert still.progress.queued > 0
        async with db.transaction(immediate=True) as conn:
            await service.resume_run(conn, org_id, run_id)
        done = await run_report_when(db, org_id, run_id)
    assert done.run.status is RunStatus.COMPLETED
    assert done.progress.completed == done.progress.total == 20
    async with db.transaction() as conn:
        count = (
            await conn.execute(select(func.count()).where(transcripts.c.run_id == run_id))
        ).scalar_one()
    assert count == 20


async def test_transient_errors_are_retried_and_no_result_is_written_twice(
    db: Database, org_id: str
) -> None:
    config = RunConfig(
        models=("scripted:utilitarian?error_rate=0.3&seed=5",),
        sample_percentage=60,
        followup_turns=0,
    )
    run_id = await _launch(db, org_id, config)
    async with _worker(db):
        done = await run_report_when(db, org_id, run_id)
    async with db.transaction() as conn:
        attempts = (
            await conn.execute(
                select(func.sum(jobs.c.attempts)).where(
                    jobs.c.partition == run_id, jobs.c.kind == "probe"
                )
            )
        ).scalar_one()
        count = (
            await conn.execute(select(func.count()).where(transcripts.c.run_id == run_id))
        ).scalar_one()
    assert attempts > done.progress.total  # some attempts failed and were retried
    assert count == done.progress.completed  # one transcript per succeeded job
    assert done.progress.completed + done.progress.failed == 16


async def test_a_missing_api_key_fails_at_creation_and_writes_nothing(
    db: Database, org_id: str
) -> None:
    definition_id = await _definition(db, org_id)
    config = RunConfig(models=("openai:gpt-4.1", "scripted:utilitarian"))
    async with db.transaction() as conn:
        with pytest.raises(ValueRankError) as caught:
            await launch_run(conn, org_id, definition_id, config, environ={})
    assert caught.value.code == "MISSING_CREDENTIAL"
    assert "OPENAI_API_KEY" in caught.value.message
    async with db.transaction() as conn:
        assert await service.list_runs(conn, org_id) == []


async def test_a_finished_run_exports_and_imports_byte_for_byte(db: Database, org_id: str) -> None:
    config = RunConfig(
        models=("scripted:utilitarian", "scripted:contrarian"),
        sample_percentage=15,
        samples_per_scenario=2,
        followup_turns=1,
        judge_models=("scripted:centrist",),
    )
    run_id = await _launch(db, org_id, config)
    async with _worker(db):
        done = await run_report_when(db, org_id, run_id)
    assert done.run.status is RunStatus.COMPLETED
    async with db.transaction() as conn:
        first = await export_run(conn, org_id, run_id)
        other = await ensure_org(conn, "elsewhere")
    path = Path(tempfile.mkdtemp()) / "run.zip"
    path.write_bytes(first)
    async with db.transaction(immediate=True) as conn:
        [imported] = await import_runs(conn, other, path)
    assert imported.transcripts == 4 * 2 * 2
    async with db.transaction() as conn:
        second = await export_run(conn, other, imported.id)
    a, b = zipfile.ZipFile(io.BytesIO(first)), zipfile.ZipFile(io.BytesIO(second))
    transcripts_a = sorted(n for n in a.namelist() if n.startswith("transcripts/"))
    assert transcripts_a == sorted(n for n in b.namelist() if n.startswith("transcripts/"))
    assert any(".sample1." in n for n in transcripts_a)
    for name in transcripts_a:
        assert a.read(name) == b.read(name)
    assert yaml.safe_load(a.read("run_manifest.yaml")) == yaml.safe_load(
        b.read("run_manifest.yaml")
    )
    assert a.read("summary.csv") == b.read("summary.csv")
