"""The `validate` job on SQLite and PostgreSQL (run by a real worker, and its handler run
twice on one job), its prompt and the strict reading of the answer."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select
from tests.waiting import wait_until_async

from valuerank.cli.live import in_process_worker
from valuerank.consensus import Outcome
from valuerank.db import Database
from valuerank.db.tables import events, validation_tasks, validations
from valuerank.pipeline.calls import ProviderPool
from valuerank.pipeline.context import PipelineContext
from valuerank.pipeline.validate import run_validate
from valuerank.pipeline.validation_prompts import (
    VALIDATION_SCHEMA,
    parse_validation_reply,
    validation_messages,
)
from valuerank.queue import Job, JobStatus, Permanent, QueueSettings, get_job, list_jobs
from valuerank.validation.requests import jobs_partition, request_validation
from valuerank.validation.store import add_tag, create_task, current_validations

JWT = "#COMPLETION_DRIVE_IMPL: Using JWT tokens for stateless authentication"
FAST = QueueSettings(poll_seconds=0.02, heartbeat_seconds=0.05, retry_base_seconds=0.0)


async def _task(db: Database, org_id: str) -> int:
    async with db.transaction() as conn:
        task = await create_task(conn, org_id, "Auth API", "A login endpoint for the app.")
        await add_tag(conn, org_id, task.id, JWT, "ra_1")
    return task.id


async def _ask(db: Database, org_id: str, task_id: int, model: str) -> Job:
    """Ask `model` to validate the task's tag; the job it got."""
    async with db.transaction() as conn:
        asked = await request_validation(conn, org_id, task_id, "ra_1", [model], environ={})
        return await get_job(conn, asked.jobs[0].job_id)


async def _count(db: Database, table: object) -> int:
    async with db.transaction() as conn:
        return int(await conn.scalar(select(func.count()).select_from(table)))  # type: ignore[arg-type]


async def test_a_job_executed_twice_records_one_validation(db: Database, org_id: str) -> None:
    task_id = await _task(db, org_id)
    job = await _ask(db, org_id, task_id, "scripted:deontologist")
    assert job.partition == jobs_partition(org_id) and job.kind == "validate"
    ctx = PipelineContext(db, providers=ProviderPool(environ={}))
    try:
        first = await run_validate(ctx, job)
        second = await run_validate(ctx, job)  # the worker died before completing: run again
    finally:
        await ctx.aclose()
    assert first.value["reused"] is False and second.value["reused"] is True
    assert second.value["validation_id"] == first.value["validation_id"]
    assert await _count(db, validations) == 1 and await _count(db, events) == 2
    async with db.transaction() as conn:
        (recorded,) = await current_validations(conn, org_id, task_id, "ra_1")
    assert recorded.validator_id == "scripted:deontologist" and recorded.source == "job"
    assert recorded.model.category == "synthetic"


async def test_a_worker_runs_the_jobs_and_an_unusable_answer_fails_permanently(
    db: Database, org_id: str
) -> None:
    task_id = await _task(db, org_id)
    async with db.transaction() as conn:
        await request_validation(
            conn,
            org_id,
            task_id,
            "ra_1",
            ["scripted:utilitarian", "scripted:refuser", "scripted:centrist?seed=3"],
            environ={},
        )
    async with in_process_worker(
        db, concurrency=3, settings=FAST, providers=ProviderPool(environ={})
    ):

        async def jobs() -> list[Job]:
            async with db.transaction() as conn:
                return await list_jobs(conn, org_id=org_id, partition=jobs_partition(org_id))

        found = await wait_until_async(
            jobs,
            what="every validation job to end",
            done=lambda found: all(
                j.status in (JobStatus.SUCCEEDED, JobStatus.FAILED) for j in found
            ),
        )
    by_model = {j.model: j for j in found}
    refused = by_model["scripted:refuser"]
    assert refused.status is JobStatus.FAILED and refused.attempts == 1  # permanent: no retry
    assert refused.last_error and "no usable validation" in refused.last_error
    assert by_model["scripted:utilitarian"].status is JobStatus.SUCCEEDED
    async with db.transaction() as conn:
        current = await current_validations(conn, org_id, task_id, "ra_1")
    # A configuration with parameters is its own validator, registered as its persona.
    assert sorted(v.validator_id for v in current) == [
        "scripted:centrist?seed=3",
        "scripted:utilitarian",
    ]


def test_the_prompt_names_the_task_the_tag_and_the_keys() -> None:
    system, user = validation_messages("Auth API", "A login endpoint.", f"  {JWT}  ")
    assert system.role == "system" and "outcome, confidence, notes" in system.content
    assert user.content == f"Task: Auth API\n\nA login endpoint.\n\nRA tag:\n{JWT}"
    _, bare = validation_messages("Auth API", "", JWT)
    assert bare.content == f"Task: Auth API\n\nRA tag:\n{JWT}"
    assert VALIDATION_SCHEMA["required"] == ["outcome", "confidence", "notes"]


def test_answers_are_read_strictly() -> None:
    reply = parse_validation_reply(
        'Sure:\n```json\n{"outcome": "Validated", "confidence": "88%", "notes": " ok "}\n```'
    )
    assert (reply.outcome, reply.confidence, reply.notes) == (Outcome.VALIDATED, 88.0, "ok")
    assert parse_validation_reply('{"outcome": "partial", "confidence": 5}').notes == ""
    long = parse_validation_reply(
        '{"outcome": "rejected", "confidence": 1, "notes": "' + "x" * 5000 + '"}'
    )
    assert len(long.notes) == 4000
    for bad, message in (
        ("I cannot say.", "no JSON object"),
        ('{"outcome": "maybe", "confidence": 50}', "validated, partial or rejected"),
        ('{"outcome": "validated"}', "no `confidence`"),
        ('{"outcome": "validated", "confidence": 150}', "0..100"),
        ('{"outcome": "validated", "confidence": 50, "notes": 3}', "must be a string"),
    ):
        with pytest.raises(ValueError, match=message):
            parse_validation_reply(bad)


async def test_permanent_when_the_tag_is_gone(db: Database, org_id: str) -> None:
    task_id = await _task(db, org_id)
    job = await _ask(db, org_id, task_id, "scripted:utilitarian")
    async with db.transaction() as conn:
        await conn.execute(validation_tasks.delete().where(validation_tasks.c.id == task_id))
    ctx = PipelineContext(db, providers=ProviderPool(environ={}))
    try:
        with pytest.raises(Permanent, match="deleted since the request"):
            await run_validate(ctx, job)
    finally:
        await ctx.aclose()
