"""A probe or judge worker killed (SIGKILL) after its transcript or judgment is committed but
before its job is completed: the job is reaped and retried by another worker, which reuses
what was written. Exactly one transcript per item and one judgment per (transcript, judge)."""

from __future__ import annotations

import signal
from pathlib import Path

from sqlalchemy import func, select

import valuerank
from valuerank.db.tables import judgments, transcripts
from valuerank.definitions.service import import_definition
from valuerank.failpoints import ENV_VAR, JUDGE_AFTER_JUDGMENT, PROBE_AFTER_TRANSCRIPT
from valuerank.pipeline.launch import launch_run
from valuerank.runs.config import RunConfig
from valuerank.runs.service import get_run
from valuerank.runs.states import RunStatus

from .conftest import Faults

DEMO = Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md"
MODELS = ("scripted:utilitarian", "scripted:deontologist")
JUDGES = ("scripted:deontologist", "scripted:contrarian")


async def _launch(faults: Faults, *, judges: tuple[str, ...] = ()) -> tuple[str, int]:
    """A started run of the demo definition; (run id, number of probe items)."""
    async with faults.db.transaction() as conn:
        stored, _ = await import_definition(
            conn, faults.org_id, DEMO.read_text(), source_file=DEMO.name
        )
        config = RunConfig(
            models=MODELS,
            sample_percentage=10,
            sample_seed=0,
            followup_turns=0,
            judge_models=judges,
        )
        launched = await launch_run(conn, faults.org_id, stored.version.id, config, environ={})
    assert launched.started is not None
    return launched.created.run.id, launched.created.scenarios * len(MODELS)


async def _count(faults: Faults, what: str, run_id: str) -> tuple[int, int]:
    """(rows, distinct natural keys) of the run's transcripts or judgments."""
    async with faults.db.transaction() as conn:
        if what == "transcripts":
            key = func.count(func.distinct(transcripts.c.scenario_id + "|" + transcripts.c.model))
            query = select(func.count(), key).where(transcripts.c.run_id == run_id)
        else:
            key = func.count(
                func.distinct(judgments.c.transcript_id + "|" + judgments.c.judge_model)
            )
            query = (
                select(func.count(), key)
                .select_from(judgments.join(transcripts))
                .where(transcripts.c.run_id == run_id)
            )
        rows, distinct = (await conn.execute(query)).one()
    return int(rows), int(distinct)


async def _crash_then_recover(faults: Faults, failpoint: str, run_id: str) -> None:
    """Worker A dies at `failpoint`; worker B (burst) reaps A's job and finishes the run."""
    # One job in A's hands when it dies: no jobs claimed ahead (tests/queue/test_claim_ahead.py
    # kills a worker that holds some).
    crashing = faults.worker(
        "A",
        "--concurrency",
        "1",
        process_env={ENV_VAR: failpoint, "VALUERANK_WORKER_CLAIM_AHEAD": "0"},
    )
    code, _ = crashing.finish()
    assert code == -signal.SIGKILL, f"A should have died at {failpoint}: {crashing.log()[-2000:]}"
    orphaned = [j for j in await faults.jobs() if j.status.value == "running"]
    assert len(orphaned) == 1 and orphaned[0].locked_by == "A"

    recovering = faults.worker("B", "--burst", "--concurrency", "2")
    code, summary = recovering.finish()
    assert code == 0 and summary["reaped"] >= 1
    [retried] = [j for j in await faults.jobs() if j.id == orphaned[0].id]
    assert retried.status.value == "succeeded" and retried.attempts >= 2
    assert retried.result["reused"] is True  # B found A's row and did not call the model again
    async with faults.db.transaction() as conn:
        run = await get_run(conn, faults.org_id, run_id)
    assert run.status is RunStatus.COMPLETED
    completed = await faults.completions()
    assert completed and set(completed.values()) == {1}  # one task_complete per job


async def test_probe_killed_after_its_transcript_writes_it_once(faults: Faults) -> None:
    run_id, items = await _launch(faults)
    assert items >= 4
    await _crash_then_recover(faults, PROBE_AFTER_TRANSCRIPT, run_id)
    assert await _count(faults, "transcripts", run_id) == (items, items)


async def test_judge_killed_after_its_judgment_writes_it_once(faults: Faults) -> None:
    run_id, items = await _launch(faults, judges=JUDGES)
    await _crash_then_recover(faults, JUDGE_AFTER_JUDGMENT, run_id)
    assert await _count(faults, "transcripts", run_id) == (items, items)
    expected = items * len(JUDGES)
    assert await _count(faults, "judgments", run_id) == (expected, expected)
