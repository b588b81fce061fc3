"""A job that is not ready yet snoozes: queued again later, attempt refunded, no error kept."""

from __future__ import annotations

from typing import TYPE_CHECKING

from valuerank.queue import JobStatus, Snooze, errors_of, settle_error

if TYPE_CHECKING:
    from tests.queue.conftest import Kit


async def test_a_snoozed_job_waits_without_spending_an_attempt(kit: Kit) -> None:
    [job_id] = await kit.put(max_attempts=1)
    for _ in range(3):  # more snoozes than attempts: none is spent
        await kit.age("run_at", 1.0, [job_id])
        [job] = await kit.take()
        assert job.attempts == 1
        async with kit.db.transaction(immediate=True) as conn:
            status = await settle_error(
                conn, job, Snooze(30.0, "waiting for the others"), settings=kit.settings
            )
        assert status is JobStatus.QUEUED
        stored = await kit.load(job_id)
        assert stored.attempts == 0 and stored.status is JobStatus.QUEUED
        assert await kit.take() == []  # not due for another 30 s
    async with kit.db.transaction() as conn:
        assert await errors_of(conn, job_id) == []
    retrying = [e for e in await kit.events() if e.type == "task_retrying"]
    assert len(retrying) == 3
    assert {e.data["reason"] for e in retrying} == {"waiting for the others"}
