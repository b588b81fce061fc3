"""Run lifecycle on SQLite and PostgreSQL: create, start, pause, resume, cancel, delete,
rerun failed, expand — each move guarded, scoped by organisation, nothing half-written."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import func, select, update

import valuerank
from valuerank.db import Database
from valuerank.db.tables import events, jobs, run_scenarios, runs, transcripts
from valuerank.definitions.service import import_definition
from valuerank.errors import ConflictError, InvalidInputError, NotFoundError
from valuerank.orgs import ensure_org
from valuerank.queue.controls import paused
from valuerank.refs import short_id
from valuerank.runs import service
from valuerank.runs.config import RunConfig, build_config
from valuerank.runs.progress import run_report
from valuerank.runs.states import RunStatus
from valuerank.shapes import dump

DEMO = Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md"
MODELS = ("scripted:utilitarian", "scripted:deontologist")


async def _definition(db: Database, org_id: str) -> str:
    async with db.transaction() as conn:
        stored, _ = await import_definition(conn, org_id, DEMO.read_text(), source_file=DEMO.name)
    return stored.version.id


async def _create(db: Database, org_id: str, **config: object) -> service.CreatedRun:
    definition_id = await _definition(db, org_id)
    async with db.transaction() as conn:
        return await service.create_run(
            conn,
            org_id,
            definition_id,
            RunConfig(models=MODELS, **config),  # type: ignore[arg-type]
        )


async def _count(db: Database, table: object, run_id: str) -> int:
    column = table.c.run_id if "run_id" in table.c else table.c.partition  # type: ignore[attr-defined]
    async with db.transaction() as conn:
        return int((await conn.execute(select(func.count()).where(column == run_id))).scalar_one())


async def test_create_freezes_the_nested_sample(db: Database, org_id: str) -> None:
    created = await _create(db, org_id, sample_percentage=30, sample_seed=4)
    assert created.total_scenarios == 27
    assert created.scenarios == 8  # floor(27 · 0.3)
    assert created.jobs_planned == 16
    assert created.run.status is RunStatus.PENDING
    assert created.run.synthetic is True
    assert "Please answer" in created.run.config.preamble
    assert await _count(db, run_scenarios, created.run.id) == 8
    assert await _count(db, jobs, created.run.id) == 0  # nothing enqueued before start


async def test_start_enqueues_one_probe_per_item_and_twice_adds_nothing(
    db: Database, org_id: str
) -> None:
    created = await _create(db, org_id, sample_percentage=20, samples_per_scenario=2)
    async with db.transaction() as conn:
        first = await service.start_run(conn, org_id, created.run.id)
    async with db.transaction() as conn:
        second = await service.start_run(conn, org_id, short_id(created.run.id))
    assert first.enqueued == 5 * 2 * 2 and first.existing == 0
    assert second.enqueued == 0 and second.existing == 20
    assert first.run.status is RunStatus.RUNNING and first.run.started_at is not None
    async with db.transaction() as conn:
        payloads = (
            (await conn.execute(select(jobs.c.payload).where(jobs.c.partition == created.run.id)))
            .scalars()
            .all()
        )
    # what a TPM bucket reserves: the prompts plus max_tokens per turn (turn 1 + 1 follow-up)
    assert all(p["estimated_tokens"] > 2 * 1000 for p in payloads)
    async with db.transaction() as conn:
        report = await run_report(conn, org_id, created.run.id)
    assert dump(report.progress) == {
        "total": 20,
        "queued": 20,
        "running": 0,
        "completed": 0,
        "failed": 0,
        "cancelled": 0,
    }


async def test_pause_resume_cancel_are_guarded(db: Database, org_id: str) -> None:
    created = await _create(db, org_id, sample_percentage=10)
    run_id = created.run.id
    async with db.transaction() as conn:
        await service.start_run(conn, org_id, run_id)
        assert (await service.pause_run(conn, org_id, run_id)).status is RunStatus.PAUSED
        assert run_id in (await paused(conn))["partition"]
        assert (await service.resume_run(conn, org_id, run_id)).status is RunStatus.RUNNING
        assert run_id not in (await paused(conn))["partition"]
        cancelled = await service.cancel_run(conn, org_id, run_id)
        assert cancelled.status is RunStatus.CANCELLED and cancelled.finished_at is not None
        report = await run_report(conn, org_id, run_id)
        assert report.progress.cancelled == report.progress.total > 0
    async with db.transaction() as conn:
        with pytest.raises(ConflictError, match="cancelled: cannot resume"):
            await service.resume_run(conn, org_id, run_id)
    async with db.transaction() as conn:
        with pytest.raises(ConflictError, match="cannot pause"):
            await service.pause_run(conn, org_id, run_id)


async def test_concurrent_cancels_of_one_run_all_answer_the_cancelled_run(
    db: Database, org_id: str
) -> None:
    """A cancel is idempotent under concurrency too: the requests that lose the race answer
    like a sequential repeat instead of 409 (PostgreSQL re-checks a waiting UPDATE's WHERE)."""
    created = await _create(db, org_id, sample_percentage=10)
    async with db.transaction() as conn:
        await service.start_run(conn, org_id, created.run.id)

    async def cancel() -> RunStatus:
        async with db.transaction(immediate=True) as conn:  # as the API's steering routes
            return (await service.cancel_run(conn, org_id, created.run.id)).status

    statuses = await asyncio.gather(*(cancel() for _ in range(6)))
    assert statuses == [RunStatus.CANCELLED] * 6
    async with db.transaction() as conn:
        # A race lost to another state is still refused, naming that state by its short id.
        with pytest.raises(ConflictError, match=f"run {short_id(created.run.id)} is cancelled"):
            await service.pause_run(conn, org_id, created.run.id)


async def test_expand_adds_only_the_missing_scenarios(db: Database, org_id: str) -> None:
    created = await _create(db, org_id, sample_percentage=20, sample_seed=9)
    run_id = created.run.id
    async with db.transaction() as conn:
        await service.start_run(conn, org_id, run_id)
        before = set(await service.run_scenario_ids(conn, run_id))
        run, added = await service.expand_run(conn, org_id, run_id, 50)
        after = set(await service.run_scenario_ids(conn, run_id))
    assert len(before) == 5 and len(after) == 13 and added == 8
    assert before < after  # nested: the 20% sample is inside the 50% one
    assert run.config.sample_percentage == 50 and run.config.generation == 1
    assert await _count(db, jobs, run_id) == 13 * 2
    async with db.transaction() as conn:
        with pytest.raises(ConflictError, match="already covers 50%"):
            await service.expand_run(conn, org_id, run_id, 40)


async def test_rerun_failed_reopens_a_finished_run(db: Database, org_id: str) -> None:
    created = await _create(db, org_id, sample_percentage=10)
    run_id = created.run.id
    async with db.transaction() as conn:
        await service.start_run(conn, org_id, run_id)
        await conn.execute(
            update(jobs).where(jobs.c.partition == run_id).values(status="failed", attempts=3)
        )
        await conn.execute(update(runs).where(runs.c.id == run_id).values(status="completed"))
    async with db.transaction() as conn:
        run, count = await service.rerun_failed(conn, org_id, run_id)
        report = await run_report(conn, org_id, run_id)
    assert count == 4
    assert run.status is RunStatus.RUNNING and run.config.generation == 1
    assert report.progress.queued == 4 and report.progress.failed == 0


async def test_delete_removes_everything_but_not_while_jobs_run(db: Database, org_id: str) -> None:
    created = await _create(db, org_id, sample_percentage=10)
    run_id = created.run.id
    async with db.transaction() as conn:
        await service.start_run(conn, org_id, run_id)
        await service.pause_run(conn, org_id, run_id)
        await conn.execute(
            update(jobs)
            .where(
                jobs.c.id
                == select(jobs.c.id).where(jobs.c.partition == run_id).limit(1).scalar_subquery()
            )
            .values(status="running")
        )
    async with db.transaction() as conn:
        with pytest.raises(ConflictError, match="cancel it first"):
            await service.delete_run(conn, org_id, run_id)
    async with db.transaction() as conn:
        await conn.execute(
            update(jobs).where(jobs.c.partition == run_id).values(status="cancelled")
        )
        await service.delete_run(conn, org_id, run_id)
    for table in (jobs, events, run_scenarios, transcripts, runs):
        column = table.c.id if table is runs else None
        if column is not None:
            async with db.transaction() as conn:
                left = await conn.execute(select(func.count()).where(column == run_id))
                assert left.scalar_one() == 0
        else:
            assert await _count(db, table, run_id) == 0


async def test_another_organisation_cannot_see_or_steer_a_run(db: Database, org_id: str) -> None:
    created = await _create(db, org_id, sample_percentage=10)
    async with db.transaction() as conn:
        other = await ensure_org(conn, "other")
    for action in (service.get_run, service.pause_run, service.cancel_run, service.delete_run):
        async with db.transaction() as conn:
            with pytest.raises(NotFoundError):
                await action(conn, other, created.run.id)
    async with db.transaction() as conn:
        assert await service.list_runs(conn, other) == []


def test_run_config_refuses_bad_settings() -> None:
    with pytest.raises(ValueError, match="provider:model"):
        RunConfig(models=("gpt-4",))
    with pytest.raises(ValueError, match="listed twice"):
        RunConfig(models=("openai:a", "openai:a"))
    with pytest.raises(ValueError):
        RunConfig(models=("openai:a",), sample_percentage=0)
    with pytest.raises(ValueError):
        RunConfig(models=())
    # A seed is bounded like every integer setting (2**200 was once accepted and run).
    with pytest.raises(ValueError, match="sample_seed"):
        RunConfig(models=("openai:a",), sample_seed=2**200)
    with pytest.raises(InvalidInputError, match="sample_seed"):
        build_config(models=("openai:a",), sample_seed=2**53)
    assert build_config(models=("openai:a",), sample_seed=2**53 - 1).sample_seed == 2**53 - 1
