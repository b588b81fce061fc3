"""Claim: one statement, each job to one claimer, priority then fairness then age."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Dialect, make_url

from valuerank.db import Database
from valuerank.orgs import ensure_org
from valuerank.queue import JobStatus, SlotScope, complete, set_cap
from valuerank.queue.claim_sql import PG_CLAIM_FAST, claim_statement, pg_statement
from valuerank.queue.dialect import as_utc

if TYPE_CHECKING:
    from tests.queue.conftest import Kit


def _pg() -> Dialect:
    return make_url("postgresql+psycopg://").get_dialect()()


def test_the_statement_on_each_backend() -> None:
    pg = str(
        claim_statement("postgresql", n=5, worker_id="w", lease_seconds=30).compile(dialect=_pg())
    )
    # PostgreSQL: a skip scan over the partitions holding queued jobs, the best candidates of
    # each by index, then locked in claim order, skipping locked rows, and updated: one statement.
    assert pg.startswith("WITH RECURSIVE")
    assert "c AS MATERIALIZED" in pg and "LIMIT 5 FOR UPDATE OF jj SKIP LOCKED" in pg
    assert "UPDATE jobs SET status = 'running'" in pg and "FROM c" in pg and "RETURNING" in pg
    assert pg.count("UPDATE jobs") == 1 and "INSERT " not in pg
    # The fast path's statement also writes the events and counters, guarded: one statement.
    fast = str(pg_statement(PG_CLAIM_FAST, 5).compile(dialect=_pg()))
    assert "c AS MATERIALIZED" in fast and "FOR UPDATE OF jj SKIP LOCKED" in fast
    assert "INSERT INTO events" in fast and "INSERT INTO queue_controls" in fast
    assert "EXISTS (SELECT 1 FROM queue_slots)" in fast and "pg_notify" in fast
    lite = str(
        claim_statement("sqlite", n=5, worker_id="w", lease_seconds=30).compile(
            dialect=sqlite.dialect()
        )
    )
    assert lite.startswith("UPDATE jobs SET") and "WHERE jobs.id IN (SELECT" in lite
    assert "RETURNING" in lite


async def test_claim_leases_the_job(kit: Kit) -> None:
    (job_id,) = await kit.put()
    (job,) = await kit.take(worker="worker-7")
    assert job.id == job_id and job.status is JobStatus.RUNNING
    assert job.attempts == 1 and job.locked_by == "worker-7"
    assert job.lease_token and job.lease_expires_at and job.started_at
    assert 25 < (job.lease_expires_at - job.started_at).total_seconds() <= 30.01
    stored = await kit.load(job_id)
    assert stored.lease_token == job.lease_token
    # Nothing left to claim.
    assert await kit.take() == []


async def test_each_lease_token_is_new(kit: Kit) -> None:
    await kit.put(3)
    tokens = {j.lease_token for j in await kit.take(3)}
    assert len(tokens) == 3


async def test_priority_then_age(kit: Kit) -> None:
    low = await kit.put(prefix="low", priority="low")
    normal = await kit.put(2, prefix="normal")
    high = await kit.put(prefix="high", priority="high")
    urgent = await kit.put(prefix="urgent", priority=99)
    order = [j.id for _ in range(5) for j in await kit.take()]
    assert order == urgent + high + normal + low


async def test_kinds_restrict_what_a_worker_claims(kit: Kit) -> None:
    (a,) = await kit.put(prefix="a", kind="alpha")
    (b,) = await kit.put(prefix="b", kind="beta")
    assert [j.id for j in await kit.take(5, kinds=["beta"])] == [b]
    assert await kit.take(5, kinds=[]) == []
    assert [j.id for j in await kit.take(5, kinds=["alpha", "beta"])] == [a]


async def test_racing_claimers_never_share_a_job(kit: Kit) -> None:
    """8 claimers, each with its own connection, race over 200 jobs."""
    ids = set(await kit.put(100, partition="run-a"))
    ids |= set(await kit.put(100, partition="run-b"))
    seen: list[str] = []

    async def claimer(n: int) -> None:
        while batch := await kit.take(3, worker=f"w{n}"):
            seen.extend(j.id for j in batch)
            await asyncio.sleep(0)

    await asyncio.gather(*(claimer(n) for n in range(8)))
    assert len(seen) == len(set(seen)) == 200
    assert set(seen) == ids
    assert await kit.status_counts() == {"running": 200}


async def test_fairness_a_small_org_is_not_starved(kit: Kit) -> None:
    """Org A enqueues 10 000 jobs, then org B 10: with 4 slots, all of B's start before
    A's next 50."""
    db: Database = kit.db
    async with db.transaction() as conn:
        org_b = await ensure_org(conn, "org-b")
    await kit.put(10_000, partition="a-run", prefix="a")
    async with db.transaction(immediate=True) as conn:
        await set_cap(conn, SlotScope.GLOBAL, 4)
    running = await kit.take(4)
    assert {j.org_id for j in running} == {kit.org_id}
    await kit.put(10, partition="b-run", prefix="b", org_id=org_b)

    started: list[str] = []
    while started.count(org_b) < 10:
        oldest = min(running, key=lambda j: (as_utc(j.started_at or j.created_at), j.id))
        running.remove(oldest)
        async with db.transaction(immediate=True) as conn:
            assert await complete(conn, oldest.lease)
        (job,) = await kit.take(1)
        running.append(job)
        started.append(job.org_id)
    assert started.count(kit.org_id) < 50, started
