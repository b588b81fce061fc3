"""Claiming jobs: the one statement that turns eligible `queued` jobs into leased `running` ones.

PostgreSQL::

    WITH c AS MATERIALIZED (
        SELECT j.id FROM jobs j LEFT JOIN <running per org> … LEFT JOIN <running per partition> …
        WHERE <eligible> ORDER BY <priority, fairness, age> LIMIT n FOR UPDATE OF j SKIP LOCKED)
    UPDATE jobs SET status='running', lease_token=gen_random_uuid(), … FROM c
    WHERE jobs.id = c.id AND jobs.status IN ('queued') RETURNING jobs.*

SQLite (inside BEGIN IMMEDIATE, which serialises writers)::

    UPDATE jobs SET status='running', lease_token=lower(hex(randomblob(16))), …
    WHERE jobs.id IN (SELECT j.id … WHERE <eligible> ORDER BY … LIMIT n)
      AND jobs.status IN ('queued') RETURNING *

Eligible: `queued`, `run_at <=` the database's now, a handled kind, neither its partition
(paused or cancelled), its provider nor the whole queue paused, and no full cap applies.
Order: priority (high first); then the organisation with the fewest running jobs, then within
it the partition with the fewest; then the oldest `run_at`, creation and id.

Caps: each round claims at most as many jobs as the fullest non-full cap has room for, so one
round cannot overshoot a cap it read; the slots are then taken under row locks in the same
transaction (`slots.take_slots`) and a job whose slots were taken meanwhile by a concurrent
claimer is put back as if never claimed. Each round is its own short transaction: no
transaction is ever held while a handler runs.

Rate limits (`ratelimit.py`): jobs whose bucket can grant nothing now (blocked, minimum
interval not passed, out of requests/tokens, or refused earlier in this claim) are left out
by the statement itself, so they never stand in front of other providers' jobs. The claimed
jobs' buckets are then locked and each job reserves 1 request + its estimated tokens in
order; a refused job is put back as if never claimed, its bucket is closed for the rest of
this claim and another round is tried (bounded: each extra round closes one more bucket).
"""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import String, and_, cast, false, func, not_, null, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from valuerank.db.engine import Database
from valuerank.db.tables import jobs, queue_controls
from valuerank.queue.dialect import db_now, db_now_plus
from valuerank.queue.events import EventType, emit_job_event
from valuerank.queue.job import Job, job_from_row
from valuerank.queue.ratelimit import (
    BucketState,
    exclusion_clauses,
    job_bucket_keys,
    load_buckets,
    plan_reservations,
    write_reservations,
)
from valuerank.queue.settings import QueueSettings
from valuerank.queue.slots import (
    Cap,
    SlotScope,
    applicable_keys,
    ensure_org_caps,
    list_caps,
    take_slots,
)
from valuerank.queue.states import JobStatus, status_guard

GLOBAL_CONTROL = ("global", "*")


def _paused_keys(scope: str, *, or_cancelled: bool = False) -> Any:
    flag: ColumnElement[bool] = queue_controls.c.paused.is_(True)
    if or_cancelled:
        flag = or_(flag, queue_controls.c.cancel_requested.is_(True))
    return select(queue_controls.c.key).where(queue_controls.c.scope == scope, flag)


def _not_capped(j: Any, full: list[Cap]) -> list[ColumnElement[bool]]:
    """Exclude jobs to which a full cap applies."""
    clauses: list[ColumnElement[bool]] = []
    orgs = [c.org_id for c in full if c.scope is SlotScope.ORG]
    providers = [c.provider for c in full if c.scope is SlotScope.PROVIDER]
    models = [(c.provider or "", c.model) for c in full if c.scope is SlotScope.MODEL]
    if orgs:
        clauses.append(j.c.org_id.not_in(orgs))
    if providers:
        clauses.append(or_(j.c.provider.is_(None), j.c.provider.not_in(providers)))
    if models:
        clauses.append(
            or_(
                j.c.model.is_(None),
                not_(
                    or_(
                        *(
                            and_(func.coalesce(j.c.provider, "") == p, j.c.model == m)
                            for p, m in models
                        )
                    )
                ),
            )
        )
    return clauses


def _candidates(
    dialect: str,
    n: int,
    kinds: list[str] | None,
    full: list[Cap],
    closed: list[BucketState] | None = None,
    buckets: list[BucketState] | None = None,
) -> Any:
    """SELECT the ids of the n best eligible jobs (locked, skipping locked ones, on PostgreSQL)."""
    j = jobs.alias("j")
    running = jobs.alias("r")
    per_org = (
        select(running.c.org_id, func.count().label("n"))
        .where(running.c.status == JobStatus.RUNNING.value)
        .group_by(running.c.org_id)
        .subquery("org_running")
    )
    per_partition = (
        select(running.c.partition, func.count().label("n"))
        .where(running.c.status == JobStatus.RUNNING.value)
        .group_by(running.c.partition)
        .subquery("partition_running")
    )
    where: list[ColumnElement[bool]] = [
        j.c.status == JobStatus.QUEUED.value,
        j.c.run_at <= db_now(dialect),
        j.c.partition.not_in(_paused_keys("partition", or_cancelled=True)),
        or_(j.c.provider.is_(None), j.c.provider.not_in(_paused_keys("provider"))),
        *_not_capped(j, full),
        *exclusion_clauses(j, closed or [], buckets or []),
    ]
    if kinds is not None:
        where.append(j.c.kind.in_(kinds) if kinds else false())
    query = (
        select(j.c.id)
        .select_from(
            j.outerjoin(per_org, per_org.c.org_id == j.c.org_id).outerjoin(
                per_partition, per_partition.c.partition == j.c.partition
            )
        )
        .where(*where)
        .order_by(
            j.c.priority.desc(),
            func.coalesce(per_org.c.n, 0),
            func.coalesce(per_partition.c.n, 0),
            j.c.run_at,
            j.c.created_at,
            j.c.id,
        )
        .limit(n)
    )
    if dialect == "postgresql":
        query = query.with_for_update(skip_locked=True, of=j)
    return query


def _lease_token(dialect: str) -> ColumnElement[str]:
    if dialect == "postgresql":
        return cast(func.gen_random_uuid(), String)
    return func.lower(func.hex(func.randomblob(16)))


def claim_statement(
    dialect: str,
    *,
    n: int,
    worker_id: str,
    lease_seconds: float,
    kinds: list[str] | None = None,
    full: list[Cap] | None = None,
    closed: list[BucketState] | None = None,
    buckets: list[BucketState] | None = None,
) -> Any:
    """The single claiming statement for `dialect` (exposed for EXPLAIN and tests).

    `closed` rate buckets (among all `buckets`) leave their jobs out."""
    candidates = _candidates(dialect, n, kinds, full or [], closed, buckets)
    values = {
        "status": JobStatus.RUNNING.value,
        "lease_token": _lease_token(dialect),
        "lease_expires_at": db_now_plus(dialect, lease_seconds),
        "locked_by": worker_id,
        "attempts": jobs.c.attempts + 1,
        "started_at": db_now(dialect),
        "slot_keys": null(),
    }
    guard = status_guard(jobs, JobStatus.RUNNING, sources=[JobStatus.QUEUED])
    if dialect == "postgresql":
        c = candidates.cte("c").prefix_with("MATERIALIZED")
        return update(jobs).where(jobs.c.id == c.c.id, guard).values(values).returning(*jobs.c)
    return (
        update(jobs)
        .where(jobs.c.id.in_(candidates.scalar_subquery()), guard)
        .values(values)
        .returning(*jobs.c)
    )


@functools.lru_cache(maxsize=256)
def _plain_claim_statement(
    dialect: str, n: int, worker_id: str, lease_seconds: float, kinds: tuple[str, ...] | None
) -> Any:
    """`claim_statement` with no cap full and no rate bucket, cached per arguments."""
    return claim_statement(
        dialect,
        n=n,
        worker_id=worker_id,
        lease_seconds=lease_seconds,
        kinds=None if kinds is None else list(kinds),
    )


async def _unclaim(conn: AsyncConnection, job_ids: list[str]) -> None:
    """Put back jobs this transaction claimed but could not give a slot: as if never claimed."""
    await conn.execute(
        update(jobs)
        .where(
            jobs.c.id.in_(job_ids),
            status_guard(jobs, JobStatus.QUEUED, sources=[JobStatus.RUNNING]),
        )
        .values(
            status=JobStatus.QUEUED.value,
            attempts=jobs.c.attempts - 1,
            lease_token=None,
            lease_expires_at=None,
            locked_by=None,
            started_at=None,
        )
    )


_GLOBAL_PAUSED = select(queue_controls.c.paused).where(
    queue_controls.c.scope == GLOBAL_CONTROL[0], queue_controls.c.key == GLOBAL_CONTROL[1]
)  # built once: every claim round asks


async def _global_paused(conn: AsyncConnection) -> bool:
    return bool(await conn.scalar(_GLOBAL_PAUSED))


def _claim_order(job: Job) -> tuple[int, Any, Any, str]:
    return (-job.priority, job.run_at, job.created_at, job.id)


async def _claim_round(
    conn: AsyncConnection,
    *,
    n: int,
    worker_id: str,
    settings: QueueSettings,
    kinds: list[str] | None,
    closed_buckets: set[str],
) -> tuple[list[Job], bool]:
    """One claiming transaction; returns (jobs, whether more could be claimed right now).

    Adds to `closed_buckets` the rate buckets that refused a job in this round."""
    if await _global_paused(conn):
        return [], False
    buckets = await load_buckets(conn)
    closed = [b for b in buckets.values() if b.exhausted or b.key in closed_buckets]
    caps = await list_caps(conn)
    full = [c for c in caps if c.room <= 0]
    if any(c.scope is SlotScope.GLOBAL for c in full):
        return [], False
    rooms = [c.room for c in caps if c.room > 0]
    limit = min([n, *rooms])
    dialect = conn.dialect.name
    if not full and not closed and not buckets:
        # The common case: the same statement every round, built once (immutable, reusable).
        kinds_key = None if kinds is None else tuple(kinds)
        stmt = _plain_claim_statement(dialect, limit, worker_id, settings.lease_seconds, kinds_key)
    else:
        stmt = claim_statement(
            dialect,
            n=limit,
            worker_id=worker_id,
            lease_seconds=settings.lease_seconds,
            kinds=kinds,
            full=full,
            closed=closed,
            buckets=list(buckets.values()),
        )
    claimed = sorted((job_from_row(r) for r in await conn.execute(stmt)), key=_claim_order)
    more = len(claimed) == limit
    if not claimed:
        return [], False
    locked: dict[str, BucketState] | None = None
    if buckets:
        locked = await load_buckets(conn, job_bucket_keys(buckets, claimed), lock=True)
        plan = plan_reservations(locked, claimed, closed_buckets)
        if plan.refused:
            await _unclaim(conn, plan.refused)
            new = plan.refused_buckets - closed_buckets
            closed_buckets |= new
            more = bool(new)  # try again without the buckets that just ran dry
            refused_ids = set(plan.refused)
            claimed = [j for j in claimed if j.id not in refused_ids]
            if not claimed:
                return [], more
    capped = bool(caps)
    if settings.org_concurrency is not None:
        await ensure_org_caps(conn, (j.org_id for j in claimed), settings.org_concurrency)
        capped = True
    if capped:
        granted, refused = await take_slots(
            conn, [(j.id, applicable_keys(j.org_id, j.provider, j.model)) for j in claimed]
        )
        if refused:
            await _unclaim(conn, refused)
            more = False  # someone else got there first: let the caller back off
        claimed = [j for j in claimed if j.id in granted]
        for job in claimed:
            job.slot_keys = granted[job.id]
            if job.slot_keys:
                await conn.execute(
                    update(jobs).where(jobs.c.id == job.id).values(slot_keys=job.slot_keys)
                )
    if locked is not None:
        # Write only what the jobs that also got their slots reserve (a subset of a feasible
        # plan is feasible: same buckets, fewer takings).
        await write_reservations(conn, plan_reservations(locked, claimed))
    for job in sorted(claimed, key=lambda j: (j.partition, j.id)):
        await emit_job_event(conn, job, EventType.TASK_STARTED, {"worker": worker_id})
    return claimed, more


async def claim(
    db: Database,
    *,
    worker_id: str,
    limit: int = 1,
    settings: QueueSettings | None = None,
    kinds: list[str] | None = None,
) -> list[Job]:
    """Claim up to `limit` eligible jobs for `worker_id`, each with a fresh lease.

    `kinds` restricts the claim to the kinds this worker can run (None: any kind). Runs its
    own short transactions (BEGIN IMMEDIATE on SQLite); returns the jobs by priority, then age.
    """
    settings = settings or QueueSettings()
    claimed: list[Job] = []
    closed_buckets: set[str] = set()
    while len(claimed) < limit:
        async with db.transaction(immediate=True) as conn:
            batch, more = await _claim_round(
                conn,
                n=limit - len(claimed),
                worker_id=worker_id,
                settings=settings,
                kinds=kinds,
                closed_buckets=closed_buckets,
            )
        claimed.extend(batch)
        if not more:
            break
    return claimed
