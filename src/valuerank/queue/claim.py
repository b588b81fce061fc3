"""Claiming jobs: rounds of the statements in `claim_sql.py`, slots, rate reservations.

The common case on PostgreSQL (no cap, no rate bucket that limits anything, no default
organisation cap) is one statement per round (`PG_CLAIM_FAST`): the same claim, plus, in the
same statement, the `task_started` events, their sequence numbers and the partitions' job
counters (see `events.py`), and the NOTIFY. Buckets that only a 429 made (no limits: see
`ratelimit.learned_bucket`) do not stop it: it leaves out the jobs of those blocked now. Its
guard reads, in the statement's own snapshot, whether the queue is paused and whether any cap
or limiting bucket exists; if one does it claims nothing and the general path below runs
instead (and, as a hint only, claims skip the fast statement for
FAST_PATH_BACKOFF_SECONDS). When no webhook is active either, that statement is the whole
transaction and runs alone in autocommit mode (`PG_CLAIM_ALONE`: no BEGIN/COMMIT round
trips); otherwise it runs in a transaction followed by the webhook notifications.

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

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import (
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.engine import Database
from valuerank.db.tables import jobs, queue_controls
from valuerank.queue.claim_sql import (
    CONTENDED_ROUNDS,
    PG_CLAIM_ALONE,
    PG_CLAIM_FAST,
    claim_statement,
    claim_window,
    pg_sql,
    plain_claim_statement,
)
from valuerank.queue.dialect import pg_rows
from valuerank.queue.events import (
    EventType,
    Progress,
    checked,
    emit_job_events,
    job_data,
    moved,
    notify_webhooks,
    recount_partition,
)
from valuerank.queue.job import Job, job_from_row
from valuerank.queue.ratelimit import (
    BucketState,
    job_bucket_keys,
    load_buckets,
    plan_reservations,
    write_reservations,
)
from valuerank.queue.settings import QueueSettings
from valuerank.queue.slots import (
    SlotScope,
    applicable_keys,
    ensure_org_caps,
    list_caps,
    take_slots,
)
from valuerank.queue.states import JobStatus, status_guard

GLOBAL_CONTROL = ("global", "*")


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


@dataclass
class _Round:
    """What one claiming transaction did."""

    jobs: list[Job]
    more: bool  # more could be claimed right now
    contended: bool = False  # candidates held by other claimers were skipped
    recount: list[tuple[str, str]] = field(default_factory=list)  # (org, partition) to count
    capped: bool = False  # a cap or rate bucket applied: no claiming ahead


# A hint, never an input to correctness: after a fast claim's guard found a cap or a rate
# bucket, claims on that database go straight to the general path for a few seconds instead
# of trying the fast statement first each time (the general path is right in every case).
FAST_PATH_BACKOFF_SECONDS = 5.0
_fast_path_off_until: dict[str, float] = {}


def _fast_path_hinted(url: Any) -> bool:
    return time.monotonic() >= _fast_path_off_until.get(str(url), 0.0)


def _avoid_fast_path(conn: AsyncConnection) -> None:
    _fast_path_off_until[str(conn.engine.url)] = time.monotonic() + FAST_PATH_BACKOFF_SECONDS


@asynccontextmanager
async def _autocommit(db: Database) -> AsyncIterator[AsyncConnection]:
    """A connection whose every statement is its own transaction (no BEGIN, no COMMIT)."""
    async with db.engine.connect() as conn:
        yield await conn.execution_options(isolation_level="AUTOCOMMIT")


async def _emit_started(conn: AsyncConnection, claimed: list[Job], worker_id: str) -> None:
    """The `task_started` events of the jobs this round keeps, a partition at a time (in
    partition order, each in job id order), which also moves its counters (queued → running)."""
    by_partition: dict[str, list[Job]] = {}
    for job in sorted(claimed, key=lambda j: (j.partition, j.id)):
        by_partition.setdefault(job.partition, []).append(job)
    for partition_jobs in by_partition.values():
        delta = moved(JobStatus.QUEUED, JobStatus.RUNNING, len(partition_jobs))
        await emit_job_events(
            conn, partition_jobs, EventType.TASK_STARTED, {"worker": worker_id}, delta=delta
        )


async def _fast_round(
    conn: AsyncConnection,
    *,
    n: int,
    worker_id: str,
    settings: QueueSettings,
    kinds: list[str] | None,
    window: int,
    alone: bool = False,
) -> _Round | None:
    """PostgreSQL, no cap nor bucket: claim, events and counters in one statement. None when
    its guard found a cap or bucket, or (`alone`: `conn` is in autocommit) an active webhook:
    nothing was done, take the transactional path (`_claim_round`)."""
    params = {"worker_id": worker_id, "lease_seconds": float(settings.lease_seconds)}
    sql = pg_sql(
        PG_CLAIM_ALONE if alone else PG_CLAIM_FAST,
        n,
        None if kinds is None else tuple(kinds),
        window,
    )
    rows = await pg_rows(conn, sql, params)
    head = rows[0]
    if head["guard_paused"]:
        return _Round([], more=False)
    if head["guard_limited"]:
        _avoid_fast_path(conn)
        return None
    if head["guard_hooked"]:
        return None
    pairs = sorted(
        ((r, job_from_row(r)) for r in rows if r["id"] is not None),
        key=lambda pair: (pair[1].partition, pair[1].id),
    )
    if not pairs:
        # Nothing claimed: either nothing is eligible, or every candidate read was held by
        # another claimer (then try again, wider).
        contended = int(head["considered"]) > 0
        return _Round([], more=contended, contended=contended)
    data = {"worker": worker_id}
    seen: set[str] = set()
    recount: list[tuple[str, str]] = []
    for r, job in pairs:
        if job.partition not in seen:
            seen.add(job.partition)
            if alone:  # counters gone negative are put right in a transaction of their own
                if min(Progress.from_mapping(r).counts.values()) < 0:
                    recount.append((job.org_id, job.partition))
            else:
                await checked(conn, job.org_id, job.partition, Progress.from_mapping(r))
        if r["hooked"]:
            await notify_webhooks(
                conn,
                job.org_id,
                job.partition,
                int(r["event_seq"]),
                EventType.TASK_STARTED,
                job_data(job, data),
            )
    claimed = sorted((job for _, job in pairs), key=_claim_order)
    contended = len(claimed) < n and int(head["considered"]) > len(claimed)
    more = len(claimed) == n or contended
    return _Round(claimed, more=more, contended=contended, recount=recount)


async def _claim_round(
    conn: AsyncConnection,
    *,
    n: int,
    worker_id: str,
    settings: QueueSettings,
    kinds: list[str] | None,
    closed_buckets: set[str],
    contended: int = 0,
    ahead: int = 0,
) -> _Round:
    """One claiming transaction; `contended`: rounds in a row before it that skipped held
    candidates (PostgreSQL: each widens the window); `ahead`: as many more jobs when no cap
    nor rate bucket applies (else the round says `capped`).

    Adds to `closed_buckets` the rate buckets that refused a job in this round."""
    dialect = conn.dialect.name
    if (
        dialect == "postgresql"
        and settings.org_cap is None
        and not closed_buckets
        and _fast_path_hinted(conn.engine.url)
    ):
        window = claim_window(n + ahead, contended, settings.claim_window_slack)
        fast = await _fast_round(
            conn, n=n + ahead, worker_id=worker_id, settings=settings, kinds=kinds, window=window
        )
        if fast is not None:
            return fast
    if await _global_paused(conn):
        return _Round([], more=False)
    buckets = await load_buckets(conn)
    closed = [b for b in buckets.values() if b.exhausted or b.key in closed_buckets]
    caps = await list_caps(conn)
    full = [c for c in caps if c.room <= 0]
    if any(c.scope is SlotScope.GLOBAL for c in full):
        return _Round([], more=False)
    rooms = [c.room for c in caps if c.room > 0]
    limited = bool(caps or buckets or settings.org_cap is not None)
    limit = min([n, *rooms]) if limited else n + ahead
    if limit <= 0:
        return _Round([], more=False, capped=limited)
    window = claim_window(limit, contended, settings.claim_window_slack)
    if not full and not closed and not buckets:
        # The common case: the same statement every round, built once (immutable, reusable).
        kinds_key = None if kinds is None else tuple(kinds)
        stmt = plain_claim_statement(
            dialect,
            limit,
            worker_id,
            settings.lease_seconds,
            kinds_key,
            window if dialect == "postgresql" else None,
        )
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
            window=window,
        )
    rows = (await conn.execute(stmt)).all()
    claimed = sorted((job_from_row(r) for r in rows if r.id is not None), key=_claim_order)
    more = len(claimed) == limit
    contended = False
    if dialect == "postgresql" and len(claimed) < limit:
        contended = int(rows[0].considered) > len(claimed)
        more = more or contended
    if not claimed:
        return _Round([], more=more, contended=contended, capped=limited)
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
                return _Round([], more=more, capped=limited)
    capped = bool(caps)
    if settings.org_cap is not None:
        await ensure_org_caps(conn, (j.org_id for j in claimed), settings.org_cap)
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
    await _emit_started(conn, claimed, worker_id)
    return _Round(claimed, more=more, contended=contended, capped=limited)


async def claim(
    db: Database,
    *,
    worker_id: str,
    limit: int = 1,
    settings: QueueSettings | None = None,
    kinds: list[str] | None = None,
    autocommit: AsyncConnection | None = None,
    ahead: int = 0,
) -> list[Job]:
    """Claim up to `limit` eligible jobs for `worker_id`, each with a fresh lease.

    `kinds` restricts the claim to the kinds this worker can run (None: any kind). Runs its
    own short transactions (BEGIN IMMEDIATE on SQLite); returns the jobs by priority, then age.
    `autocommit`: a PostgreSQL connection in autocommit mode (no transaction open) to run the
    fast statement on, instead of checking one out of the pool (a worker keeps one).
    `ahead`: up to that many more jobs (the worker's claim-ahead), only while no cap, rate
    bucket or organisation default applies: such jobs would hold slots or reservations while
    they wait, so a claim that meets one asks for `limit` only.
    """
    settings = settings or QueueSettings()
    if kinds is not None and not kinds:
        return []
    if settings.org_cap is not None:
        ahead = 0
    claimed: list[Job] = []
    closed_buckets: set[str] = set()
    contended = 0
    # PostgreSQL's fast statement is one whole transaction when no webhook needs writing
    # after it: run it alone (autocommit), which saves the BEGIN and COMMIT round trips.
    alone = (
        db.url.dialect == "postgresql"
        and settings.org_cap is None
        and _fast_path_hinted(db.engine.url)
    )
    while len(claimed) < limit + ahead:
        result: _Round | None = None
        want = limit + ahead - len(claimed)
        if alone:
            session = nullcontext(autocommit) if autocommit is not None else _autocommit(db)
            async with session as conn:
                result = await _fast_round(
                    conn,
                    n=want,
                    worker_id=worker_id,
                    settings=settings,
                    kinds=kinds,
                    window=claim_window(want, contended, settings.claim_window_slack),
                    alone=True,
                )
            alone = result is not None  # else a cap, bucket or webhook: transactions
        if result is None:
            async with db.transaction(immediate=True) as conn:
                result = await _claim_round(
                    conn,
                    n=limit - len(claimed),
                    ahead=ahead,
                    worker_id=worker_id,
                    settings=settings,
                    kinds=kinds,
                    closed_buckets=closed_buckets,
                    contended=contended,
                )
            if result.capped:
                ahead = 0  # a cap or bucket applies: no more than `limit`
        for org_id, partition in result.recount:
            async with db.transaction(immediate=True) as conn:
                await recount_partition(conn, org_id, partition)
        claimed.extend(result.jobs)
        contended = contended + 1 if result.contended else 0
        if not result.more or contended > CONTENDED_ROUNDS:
            break
    return claimed
