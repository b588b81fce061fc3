"""A run's report at any size: its progress from the partition's counters minus its jobs of
other kinds, its tail check bounded, its results from the tallies — each equal to counting
the rows one by one, on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select

import valuerank
from valuerank.db import Database
from valuerank.db.tables import jobs, judgments, run_tallies, transcripts
from valuerank.definitions.service import import_definition
from valuerank.formats import Transcript, Turn
from valuerank.pipeline.run_end import TAIL, at_tail
from valuerank.queue import JobSpec, cancel_job, claim, complete, enqueue_many, fail
from valuerank.refs import short_id
from valuerank.runs import service
from valuerank.runs.config import RunConfig
from valuerank.runs.finalizing import finalize_spec
from valuerank.runs.kinds import FINALIZE, JUDGE, PROBE, SUMMARIZE
from valuerank.runs.progress import job_progress, run_progress, run_report
from valuerank.runs.records import JudgmentRecord, TranscriptRecord, insert_transcript
from valuerank.runs.results import model_results
from valuerank.runs.tallies import REFUSAL, run_tally

DEMO = Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md"
MODELS = ("scripted:utilitarian", "scripted:deontologist")


async def _started(db: Database, org_id: str, **config: object) -> service.Run:
    async with db.transaction() as conn:
        stored, _ = await import_definition(conn, org_id, DEMO.read_text(), source_file=DEMO.name)
        created = await service.create_run(
            conn,
            org_id,
            stored.version.id,
            RunConfig(models=MODELS, sample_seed=1, **config),  # type: ignore[arg-type]
        )
        return (await service.start_run(conn, org_id, created.run.id)).run


async def _move(db: Database, worker: str, n: int, outcome: str) -> None:
    """Claim `n` jobs and complete, fail or leave them running."""
    for job in await claim(db, worker_id=worker, limit=n):
        async with db.transaction(immediate=True) as conn:
            if outcome == "complete":
                assert await complete(conn, job.lease)
            elif outcome == "fail":
                assert await fail(conn, job.lease, "broken")


async def test_run_progress_equals_counting_the_jobs_of_each_kind(
    db: Database, org_id: str
) -> None:
    run = await _started(db, org_id, sample_percentage=50, samples_per_scenario=2)
    specs = [finalize_spec(run)] + [
        JobSpec(kind=kind, org_id=org_id, partition=run.id, item_key=f"{kind}:{i}", payload={})
        for kind in (JUDGE, SUMMARIZE)
        for i in range(3)
    ]
    async with db.transaction(immediate=True) as conn:
        await enqueue_many(conn, specs)

    async def same() -> None:
        async with db.transaction() as conn:
            probes, judging = await run_progress(conn, run.id)
            assert probes == await job_progress(conn, run.id, (PROBE,))
            assert judging == await job_progress(conn, run.id, (JUDGE, SUMMARIZE))
            report = await run_report(conn, org_id, short_id(run.id))
        assert (report.progress, report.judging) == (probes, judging)

    await same()
    await _move(db, "w1", 9, "complete")  # the claim order mixes the kinds
    await _move(db, "w1", 4, "fail")
    await _move(db, "w2", 3, "run")
    async with db.transaction(immediate=True) as conn:
        queued = await conn.scalar(
            select(jobs.c.id)
            .where(jobs.c.partition == run.id, jobs.c.status == "queued", jobs.c.kind == PROBE)
            .limit(1)
        )
        await cancel_job(conn, org_id, str(queued))
    await same()
    async with db.transaction() as conn:
        probes, judging = await run_progress(conn, run.id)
        everything = await job_progress(conn, run.id, (PROBE, FINALIZE, JUDGE, SUMMARIZE))
    assert probes.total == 13 * 2 * 2 and judging.total == 6  # 13 of 27 scenarios
    assert probes.total + judging.total + 1 == everything.total
    assert everything.completed == 9 and everything.failed == 4 and everything.running == 3
    assert everything.cancelled == 1


async def test_the_tail_check_counts_only_up_to_its_bound(db: Database, org_id: str) -> None:
    run = await _started(db, org_id, samples_per_scenario=2)  # 27 scenarios × 2 × 2 = 108
    async with db.transaction() as conn:
        assert not await at_tail(conn, org_id, run.id)
    await _move(db, "w", 108 - TAIL - 1, "complete")
    async with db.transaction() as conn:
        assert not await at_tail(conn, org_id, run.id)  # TAIL + 1 left
    await _move(db, "w", 1, "complete")
    async with db.transaction() as conn:
        assert await at_tail(conn, org_id, run.id)


def _record(
    model: str, scenario: str, sample: int, code: int | None, **extra: object
) -> TranscriptRecord:
    return TranscriptRecord(
        transcript=Transcript(
            run_id="r",
            scenario_id=scenario,
            target_model=model,
            subject="s",
            turns=(Turn(1, "scenario_prompt", "p", f"Rating: {code}"),),
        ),
        model=model,
        sample_index=sample,
        decision_code=code,
        **extra,  # type: ignore[arg-type]
    )


async def test_tallies_equal_the_transcripts_they_count(db: Database, org_id: str) -> None:
    run = await _started(db, org_id)
    judged = JudgmentRecord(
        judge_model="scripted:centrist",
        decision=3,
        prioritized_values=(),
        deprioritized_values=(),
        confidence=80.0,
        cost_usd=0.25,
    )
    records = [
        _record("scripted:utilitarian", "a", 0, 4, cost_usd=0.5, synthetic=True),
        _record("scripted:utilitarian", "b", 0, 4, cost_usd=0.25, judgments=(judged,)),
        _record("scripted:utilitarian", "c", 0, 2, cost_usd=0.125),
        _record("scripted:deontologist", "a", 0, None, decision_reason=REFUSAL, cost_usd=1.0),
        _record("scripted:deontologist", "b", 0, 5),  # cost unknown: the model's cost is None
        _record("openai:gpt-4.1", "a", 1, 1, cost_usd=2.0),
    ]
    async with db.transaction(immediate=True) as conn:
        for record in records:
            assert await insert_transcript(conn, org_id, run.id, record) is not None
        # The same transcript again (a probe executed twice) writes and counts nothing.
        assert await insert_transcript(conn, org_id, run.id, records[0]) is None
    # A write rolled back takes its tally with it (only our own exception may escape).
    with pytest.raises(RuntimeError, match=r"^rolled back$"):
        async with db.transaction(immediate=True) as conn:
            assert await insert_transcript(conn, org_id, run.id, _record("x:y", "z", 0, 3))
            raise RuntimeError("rolled back")

    async with db.transaction() as conn:
        results = {r.model: r for r in await model_results(conn, org_id, run.id)}
        report = await run_report(conn, org_id, run.id)
        stored = (
            await conn.execute(select(transcripts).where(transcripts.c.run_id == run.id))
        ).all()
        judge_cost = await conn.scalar(select(func.sum(judgments.c.cost_usd)))
    assert sorted(results) == ["openai:gpt-4.1", "scripted:deontologist", "scripted:utilitarian"]
    u, d = results["scripted:utilitarian"], results["scripted:deontologist"]
    assert (u.transcripts, u.decided, u.refusals, u.decision_counts) == (3, 3, 0, {4: 2, 2: 1})
    assert u.mean_decision == 10 / 3 and u.stdev_decision is not None
    assert round(u.stdev_decision, 9) == round((4 / 3) ** 0.5, 9)  # sample stdev of 4, 4, 2
    assert u.cost_usd == 0.875 and u.synthetic is True
    assert (d.transcripts, d.decided, d.refusals, d.cost_usd, d.synthetic) == (2, 1, 1, None, False)
    assert d.mean_decision == 5 and d.stdev_decision is None
    assert report.transcripts == len(stored) == 6
    assert report.cost_usd == sum(r.cost_usd or 0 for r in stored) + judge_cost == 4.125


async def test_a_runs_tallies_go_with_it(db: Database, org_id: str) -> None:
    run = await _started(db, org_id)
    async with db.transaction(immediate=True) as conn:
        await insert_transcript(conn, org_id, run.id, _record("scripted:utilitarian", "a", 0, 4))
        assert len(await run_tally(conn, org_id, run.id)) == 1
        await service.cancel_run(conn, org_id, run.id)
    async with db.transaction(immediate=True) as conn:
        await service.delete_run(conn, org_id, run.id)
        assert await conn.scalar(select(func.count()).select_from(run_tallies)) == 0
