"""What a claim gives out under a pause, a cap, an organisation default or a rate bucket
(each on both the fast and the general path where PostgreSQL has two), and claiming ahead
only when nothing limits."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from sqlalchemy import select

from valuerank.db.tables import jobs
from valuerank.queue import (
    JobStatus,
    QueueSettings,
    SlotScope,
    complete,
    pause_queue,
    resume_queue,
    set_cap,
)
from valuerank.queue.claim import claim
from valuerank.queue.job import Job
from valuerank.queue.ratelimit import configure_bucket
from valuerank.queue.slots import model_key, org_key

from .conftest import FAST

if TYPE_CHECKING:
    from tests.queue.conftest import Kit


@pytest.mark.parametrize("capped", [False, True], ids=["fast-path", "general-path"])
async def test_a_paused_queue_gives_nothing(kit: Kit, capped: bool) -> None:
    await kit.put(3)
    async with kit.db.transaction(immediate=True) as conn:
        if capped:  # a cap sends PostgreSQL's claim down its general statement
            await set_cap(conn, SlotScope.GLOBAL, 100)
        assert await pause_queue(conn)
    assert await kit.take(3) == []
    assert await kit.status_counts() == {"queued": 3}
    async with kit.db.transaction(immediate=True) as conn:
        assert await resume_queue(conn)
    assert len(await kit.take(3)) == 3


async def test_a_global_cap_bounds_the_claim_and_frees_as_jobs_end(kit: Kit) -> None:
    await kit.put(5)
    async with kit.db.transaction(immediate=True) as conn:
        await set_cap(conn, SlotScope.GLOBAL, 2)
    first = await kit.take(5)
    assert len(first) == 2
    assert await kit.slots_in_use() == {"global": 2}
    assert all(job.slot_keys == ["global"] for job in first)
    assert await kit.take(5) == []  # full: nothing, and nothing claimed then put back
    assert await kit.status_counts() == {"queued": 3, "running": 2}
    async with kit.db.transaction(immediate=True) as conn:
        assert await complete(conn, first[0].lease)
    (third,) = await kit.take(5)
    assert await kit.slots_in_use() == {"global": 2}
    assert (await kit.load(third.id)).attempts == 1
    queued = [job for job in await _all(kit) if job.status is JobStatus.QUEUED]
    assert len(queued) == 2 and all(job.attempts == 0 for job in queued)


async def test_a_model_cap_leaves_other_models_free(kit: Kit) -> None:
    capped = await kit.put(3, prefix="a", provider="p", model="slow")
    free = await kit.put(3, prefix="b", provider="p", model="fast")
    async with kit.db.transaction(immediate=True) as conn:
        await set_cap(conn, SlotScope.MODEL, 1, provider="p", model="slow")
    # One round claims no more than the fullest cap's room; later rounds fill up.
    taken = await kit.take(6)
    ids = {job.id for job in taken}
    assert len(ids & set(capped)) == 1
    assert set(free) <= ids
    assert await kit.slots_in_use() == {model_key("p", "slow"): 1}


async def test_the_organisation_default_cap(kit: Kit) -> None:
    await kit.put(4)
    settings = QueueSettings(**{**FAST.model_dump(), "org_concurrency": 2})
    assert settings.org_cap == 2
    taken = await kit.take(4, settings=settings)
    assert len(taken) == 2
    assert await kit.slots_in_use() == {org_key(kit.org_id): 2}
    # Claiming ahead is off under a cap: the extra jobs would hold slots while they wait.
    async with kit.db.transaction(immediate=True) as conn:
        for job in taken:
            assert await complete(conn, job.lease)
    ahead = await claim(kit.db, worker_id="w", limit=1, settings=settings, ahead=3)
    assert len(ahead) == 1


async def test_claiming_ahead_only_when_nothing_limits(kit: Kit) -> None:
    await kit.put(6)
    assert len(await claim(kit.db, worker_id="w", limit=1, settings=FAST, ahead=2)) == 3
    async with kit.db.transaction(immediate=True) as conn:
        await set_cap(conn, SlotScope.GLOBAL, 100)
    assert len(await claim(kit.db, worker_id="w", limit=1, settings=FAST, ahead=2)) == 1
    assert await claim(kit.db, worker_id="w", limit=3, settings=FAST, kinds=[]) == []


async def test_a_rate_bucket_gives_its_requests_and_others_pass(kit: Kit) -> None:
    limited = await kit.put(4, prefix="a", provider="slowai", model="m")
    other = await kit.put(2, prefix="b", provider="otherai", model="m")
    async with kit.db.transaction(immediate=True) as conn:
        await configure_bucket(conn, "slowai", rpm=2)
    taken = {job.id for job in await kit.take(6)}
    assert len(taken & set(limited)) == 2  # a full bucket of 2 requests
    assert set(other) <= taken  # the empty bucket's jobs stand in nobody's way
    left = [job for job in await _all(kit) if job.id in set(limited) - taken]
    assert len(left) == 2
    assert all(job.status is JobStatus.QUEUED and job.attempts == 0 for job in left)
    assert await kit.take(6) == []


async def _all(kit: Kit) -> list[Job]:
    async with kit.db.transaction() as conn:
        ids = [row.id for row in await conn.execute(select(jobs.c.id))]
    return [await kit.load(job_id) for job_id in ids]
