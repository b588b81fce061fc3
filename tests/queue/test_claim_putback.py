"""A job a claim took but could not keep (its rate bucket refused it) goes back exactly as it
was: queued, its attempt not counted, and no lease, worker or start time left on it (else it
would show as held by a worker that never ran it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from valuerank.queue import JobStatus
from valuerank.queue.ratelimit import configure_bucket

if TYPE_CHECKING:
    from tests.queue.conftest import Kit


async def test_a_job_refused_by_its_rate_bucket_is_put_back_untouched(kit: Kit) -> None:
    limited = await kit.put(4, prefix="a", provider="slowai", model="m")
    async with kit.db.transaction(immediate=True) as conn:
        await configure_bucket(conn, "slowai", rpm=2)
    taken = {job.id for job in await kit.take(4)}
    assert len(taken) == 2
    for job_id in set(limited) - taken:
        job = await kit.load(job_id)
        assert job.status is JobStatus.QUEUED and job.attempts == 0
        assert job.lease_token is None and job.lease_expires_at is None
        assert job.locked_by is None and job.started_at is None
