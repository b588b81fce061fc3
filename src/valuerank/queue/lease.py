"""Everything a worker does with a claimed job, fenced by its lease token.

Every statement here says `WHERE id = :job AND lease_token = :mine AND status IN ('running')`.
If the reaper or a cancellation got there first, 0 rows match and the call returns False (or
None): the attempt's outcome is discarded and nothing changes. Leaving `running` releases the
attempt's concurrency slots, records its error and writes its event, all in the caller's
transaction. On SQLite pass a connection from `db.transaction(immediate=True)`.

On PostgreSQL a completion of a job that holds no slot and has no rate bucket is one
statement (update, counters, event with progress, NOTIFY: `_PG_COMPLETE_TEMPLATE`), and
`complete_many` completes a batch of such jobs in one statement (the worker's group commit).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from sqlalchemy import case, null, update
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import jobs
from valuerank.queue.dialect import compact_sql, db_now, db_now_plus, pg_rows
from valuerank.queue.errors import (
    ErrorCategory,
    RateLimited,
    Snooze,
    backoff_seconds,
    classify,
    error_text,
    record_error,
)
from valuerank.queue.events import (
    NOTIFY_CHANNEL,
    EventType,
    Progress,
    complete_if_done,
    emit_job_event_with_progress,
    job_data,
    moved,
    notify_webhooks,
    recount_partition,
    write_event,
)
from valuerank.queue.job import LEFT_RUNNING_COLUMNS, Job, Lease
from valuerank.queue.ratelimit import note_completed, note_rate_limited
from valuerank.queue.settings import QueueSettings
from valuerank.queue.slots import release_slots
from valuerank.queue.states import ACTIVE, JobStatus, status_guard
from valuerank.queue.wakeup import notify_jobs

_EVENT_OF: dict[JobStatus, EventType] = {
    JobStatus.SUCCEEDED: EventType.TASK_COMPLETE,
    JobStatus.FAILED: EventType.TASK_FAILED,
    JobStatus.CANCELLED: EventType.TASK_CANCELLED,
    JobStatus.QUEUED: EventType.TASK_RETRYING,
}


@dataclass(frozen=True)
class LeaseState:
    """What a heartbeat learnt: is the lease still ours, and should the job stop?"""

    held: bool
    cancel_requested: bool

    @property
    def should_stop(self) -> bool:
        return not self.held or self.cancel_requested


def _mine(lease: Lease, target: JobStatus, *more: JobStatus) -> list[Any]:
    guard = status_guard(jobs, target, sources=[JobStatus.RUNNING])
    for other in more:
        status_guard(jobs, other, sources=[JobStatus.RUNNING])  # validates the transition
    return [jobs.c.id == lease.job_id, jobs.c.lease_token == lease.token, guard]


async def heartbeat(conn: AsyncConnection, lease: Lease, *, lease_seconds: float) -> LeaseState:
    """Extend the lease to now + `lease_seconds`; report a requested cancellation."""
    row = (
        await conn.execute(
            update(jobs)
            .where(
                jobs.c.id == lease.job_id,
                jobs.c.lease_token == lease.token,
                jobs.c.status == JobStatus.RUNNING.value,
            )
            .values(lease_expires_at=db_now_plus(conn.dialect.name, lease_seconds))
            .returning(jobs.c.cancel_requested)
        )
    ).first()
    if row is None:
        return LeaseState(held=False, cancel_requested=False)
    return LeaseState(held=True, cancel_requested=bool(row.cancel_requested))


async def _left_running(
    conn: AsyncConnection,
    row: Any,
    *,
    category: ErrorCategory | None = None,
    error: BaseException | str | None = None,
    extra: Mapping[str, Any] | None = None,
    refunded: bool = False,
) -> None:
    """What follows every exit from `running`: slots, error record, events."""
    attempt = row.attempts + 1 if refunded else row.attempts  # the attempt that just ended
    await release_slots(conn, row.slot_keys or [])
    if error is not None and category is not None:
        await record_error(
            conn,
            job_id=row.id,
            org_id=row.org_id,
            attempt=attempt,
            category=category,
            error=error,
        )
    status = JobStatus(row.status)
    _, progress = await emit_job_event_with_progress(
        conn,
        row,
        _EVENT_OF[status],
        {**(extra or {}), "attempt": attempt},
        delta=moved(JobStatus.RUNNING, status),
    )
    if status not in ACTIVE:
        await complete_if_done(conn, row.org_id, row.partition, progress=progress)


async def _finish(
    conn: AsyncConnection, lease: Lease, status: JobStatus, **values: Any
) -> Any | None:
    """Move my running job to a final `status` under my lease token; the row, or None when
    the lease was lost (and nothing changed)."""
    return (
        await conn.execute(
            update(jobs)
            .where(*_mine(lease, status))
            .values(
                status=status.value,
                lease_token=None,
                lease_expires_at=None,
                finished_at=db_now(conn.dialect.name),
                **values,
            )
            .returning(*LEFT_RUNNING_COLUMNS)
        )
    ).first()


# PostgreSQL, jobs holding no concurrency slot and whose rate bucket has nothing to note
# (nothing to give back or to write elsewhere): the fenced updates, each partition's sequence
# numbers and counters, the `task_complete` events with their progress and the NOTIFY, in one
# statement for a batch of jobs. The job rows are locked in id order first (as
# `cancel_partition` locks them), so two statements moving several of the same jobs queue up
# instead of deadlocking. Per partition the events are numbered in job id order and each
# shows the counts after its own job, as if the jobs had been completed one after the other.
# The guard reads each job (unlocked, like `note_completed`): a job holding slots, or whose
# provider has a bucket with adaptive concurrency, or with a TPM limit when the handler
# reported its tokens (what `note_completed` writes), is not touched: the general path
# completes it. A partition whose counters went negative (jobs changed behind the queue's
# back) gets its events from Python, after a recount. (`coalesce(status)` keeps the planner
# on the primary key: with stale statistics a partial index on running jobs can look
# cheaper, and scanning it is O(running jobs).)
_PG_COMPLETE_TEMPLATE = f"""WITH input AS (
    @INPUT@
),
guard AS MATERIALIZED (
    SELECT j.id AS job_id,
        coalesce(jsonb_array_length(
            CASE WHEN jsonb_typeof(j.slot_keys) = 'array' THEN j.slot_keys END), 0) > 0
        OR (j.provider IS NOT NULL AND EXISTS (
            SELECT 1 FROM rate_buckets b WHERE b.provider = j.provider
              AND (b.concurrency_limit IS NOT NULL OR (i.usage AND b.tpm_limit IS NOT NULL))
        )) AS slow
    FROM jobs j JOIN input i ON i.job_id = j.id WHERE j.id @IDS@
),
mine AS MATERIALIZED (
    SELECT j.id FROM jobs j JOIN input i ON i.job_id = j.id
    WHERE j.id @IDS@ AND j.lease_token = i.token AND coalesce(j.status, '') = 'running'
      AND NOT EXISTS (SELECT 1 FROM guard g WHERE g.job_id = i.job_id AND g.slow)
    ORDER BY j.id FOR UPDATE OF j
),
done AS (
    UPDATE jobs SET status = 'succeeded', lease_token = NULL, lease_expires_at = NULL,
        finished_at = now(), result = i.result
    FROM input i
    WHERE jobs.id = ANY(ARRAY(SELECT m.id FROM mine m)) AND jobs.id = i.job_id
      AND jobs.lease_token = i.token AND coalesce(jobs.status, '') IN ('running')
    RETURNING jobs.id, jobs.org_id, jobs.partition, jobs.item_key, jobs.kind, jobs.attempts,
        jobs.provider, jobs.model, i.extra
),
delta AS (
    SELECT d.partition, min(d.org_id) AS org_id, count(*) AS n FROM done d GROUP BY d.partition
),
seq AS (
    INSERT INTO queue_controls AS q (scope, key, org_id, last_seq, jobs_running, jobs_succeeded)
    SELECT 'partition', dl.partition, dl.org_id, dl.n, -dl.n, dl.n FROM delta dl
    ORDER BY dl.partition
    ON CONFLICT (scope, key) DO UPDATE SET last_seq = q.last_seq + excluded.last_seq,
        jobs_running = q.jobs_running + excluded.jobs_running,
        jobs_succeeded = q.jobs_succeeded + excluded.jobs_succeeded
    RETURNING q.key, q.last_seq, q.jobs_queued, q.jobs_running, q.jobs_succeeded, q.jobs_failed,
        q.jobs_cancelled,
        EXISTS (SELECT 1 FROM webhooks w WHERE w.org_id = q.org_id AND w.active) AS hooked
),
ranked AS (
    SELECT d.*, row_number() OVER (PARTITION BY d.partition ORDER BY d.id) AS k FROM done d
),
numbered AS (
    SELECT d.*, s.hooked, s.last_seq - dl.n + d.k AS seq,
        s.jobs_queued AS queued, s.jobs_running + dl.n - d.k AS running,
        s.jobs_succeeded - dl.n + d.k AS succeeded, s.jobs_failed AS failed,
        s.jobs_cancelled AS cancelled,
        s.jobs_queued >= 0 AND s.jobs_running >= 0 AND s.jobs_succeeded >= 0
            AND s.jobs_failed >= 0 AND s.jobs_cancelled >= 0 AS counted,
        s.jobs_queued + s.jobs_running AS final_active
    FROM ranked d JOIN delta dl ON dl.partition = d.partition JOIN seq s ON s.key = d.partition
),
ev AS (
    INSERT INTO events (partition, seq, org_id, type, data, created_at)
    SELECT n.partition, n.seq, n.org_id, 'task_complete',
        jsonb_build_object('job_id', n.id, 'kind', n.kind, 'item_key', n.item_key,
                           'provider', n.provider, 'model', n.model)
        || n.extra
        || jsonb_build_object(
            'attempt', n.attempts,
            'progress', CAST(t.total - t.active AS text) || '/' || CAST(t.total AS text),
            'done', t.total - t.active,
            'total', t.total,
            'counts', jsonb_build_object(
                'queued', n.queued, 'running', n.running, 'succeeded', n.succeeded,
                'failed', n.failed, 'cancelled', n.cancelled)),
        now()
    FROM numbered n CROSS JOIN LATERAL (
        SELECT n.queued + n.running AS active,
            n.queued + n.running + n.succeeded + n.failed + n.cancelled AS total
    ) t
    WHERE n.counted
    ORDER BY n.partition, n.seq
    RETURNING seq, partition, data
)
SELECT i.job_id, g.slow, n.id, n.org_id, n.partition, n.item_key, n.kind, n.attempts,
    n.provider, n.model, n.seq, n.hooked, n.counted, n.final_active,
    CASE WHEN n.hooked THEN e.data END AS data,
    CASE WHEN n.id IS NOT NULL THEN pg_notify('{NOTIFY_CHANNEL}', n.partition) END AS notified
FROM input i
LEFT JOIN guard g ON g.job_id = i.job_id
LEFT JOIN numbered n ON n.id = i.job_id
LEFT JOIN ev e ON e.partition = n.partition AND e.seq = n.seq"""

# One job (the common case), every value a scalar parameter: the plan PostgreSQL caches for
# the prepared statement is then as good as a fresh one, so the statement is planned once.
_PG_COMPLETE_ONE = (
    compact_sql(_PG_COMPLETE_TEMPLATE)
    .replace(
        "@INPUT@",
        "SELECT CAST(:job_id AS text) AS job_id, CAST(:token AS text) AS token, "
        "CAST(:result AS jsonb) AS result, CAST(:extra AS jsonb) AS extra, "
        "CAST(:usage AS boolean) AS usage",
    )
    .replace("@IDS@", "= :job_id")
)

# A batch: the jobs as one JSON array; the ids also as an array, for the index.
_PG_COMPLETE_MANY = (
    compact_sql(_PG_COMPLETE_TEMPLATE)
    .replace(
        "@INPUT@",
        "SELECT * FROM jsonb_to_recordset(:batch)"
        " AS x(job_id text, token text, result jsonb, extra jsonb, usage boolean)",
    )
    .replace("@IDS@", "= ANY(:ids)")
)


@dataclass(frozen=True)
class Completion:
    """One `running → succeeded` for `complete_many`."""

    lease: Lease
    result: Any = None
    event_data: Mapping[str, Any] | None = None
    usage_tokens: float | None = None


async def _complete_fast(
    conn: AsyncConnection, batch: Sequence[Completion]
) -> dict[str, bool | None]:
    """`_PG_COMPLETE_*` for a batch: {job id: True done, False lease lost, None general path}."""
    from psycopg.types.json import Jsonb  # PostgreSQL only: SQLite never loads psycopg

    extras = {
        c.lease.job_id: {k: v for k, v in (c.event_data or {}).items() if v is not None}
        for c in batch
    }
    if len(batch) == 1:
        (c,) = batch
        params: dict[str, Any] = {
            "job_id": c.lease.job_id,
            "token": c.lease.token,
            "result": None if c.result is None else Jsonb(c.result),
            "extra": Jsonb(extras[c.lease.job_id]),
            "usage": c.usage_tokens is not None,
        }
        found = await pg_rows(conn, _PG_COMPLETE_ONE, params)
    else:
        items = [
            {
                "job_id": c.lease.job_id,
                "token": c.lease.token,
                "result": c.result,
                "extra": extras[c.lease.job_id],
                "usage": c.usage_tokens is not None,
            }
            for c in batch
        ]
        ids = [c.lease.job_id for c in batch]
        found = await pg_rows(conn, _PG_COMPLETE_MANY, {"batch": Jsonb(items), "ids": ids})
    rows = [SimpleNamespace(**r) for r in found]
    outcome: dict[str, bool | None] = {}
    done = []
    for row in rows:
        if row.slow:
            outcome[row.job_id] = None
        else:
            outcome[row.job_id] = row.id is not None  # no row: the lease was lost
            if row.id is not None:
                done.append(row)
    # Partitions whose counters went negative: counted for real, then their events written.
    for partition in sorted({r.partition for r in done if not r.counted}):
        mine = sorted((r for r in done if r.partition == partition), key=lambda r: r.id)
        first = mine[0]
        fixed, _ = await recount_partition(conn, first.org_id, partition)
        for k, row in enumerate(mine, start=1):
            later = len(mine) - k  # jobs of this batch completed after this one
            counts = dict(fixed.counts)
            counts[JobStatus.RUNNING.value] += later
            counts[JobStatus.SUCCEEDED.value] -= later
            data = job_data(row, {**extras[row.id], "attempt": row.attempts})
            data |= Progress(counts).to_dict()
            await write_event(
                conn,
                row.org_id,
                partition,
                int(row.seq),
                EventType.TASK_COMPLETE,
                data,
                hooked=row.hooked,
            )
    for row in sorted(done, key=lambda r: (r.partition, r.seq)):
        if row.counted and row.hooked:
            await notify_webhooks(
                conn, row.org_id, row.partition, int(row.seq), EventType.TASK_COMPLETE, row.data
            )
    finished = {(r.org_id, r.partition) for r in done if r.counted and not r.final_active}
    finished |= {(r.org_id, r.partition) for r in done if not r.counted}
    for org_id, partition in sorted(finished, key=lambda p: p[1]):
        await complete_if_done(conn, org_id, partition)
    return outcome


async def complete_many(
    conn: AsyncConnection, batch: Sequence[Completion]
) -> dict[str, bool | None]:
    """`complete` for several jobs in the caller's transaction: {job id: completed, or None}.

    On PostgreSQL one statement completes the jobs that hold no slot and have no rate bucket;
    the others come back None, untouched: complete each with `complete` in a transaction of
    its own (so that every transaction locks job rows before partition rows). On SQLite
    (one writer at a time) each job is completed in turn, and nothing comes back None."""
    if not batch:
        return {}
    if conn.dialect.name == "postgresql":
        return await _complete_fast(conn, batch)
    return {c.lease.job_id: await _complete_general(conn, c) for c in batch}


async def complete(
    conn: AsyncConnection,
    lease: Lease,
    result: Any = None,
    *,
    event_data: Mapping[str, Any] | None = None,
    usage_tokens: float | None = None,
) -> bool:
    """`running → succeeded` with `result`; False if the lease was lost (result discarded).

    A job with a rate bucket counts a clean completion there, and `usage_tokens` (the real
    token usage) corrects the bucket's token reservation made from its estimate."""
    one = Completion(lease, result, event_data, usage_tokens)
    done = (await complete_many(conn, [one]))[lease.job_id]
    if done is None:  # nothing was written or locked: the general path
        done = await _complete_general(conn, one)
    return done


async def _complete_general(conn: AsyncConnection, c: Completion) -> bool:
    row = await _finish(
        conn, c.lease, JobStatus.SUCCEEDED, result=null() if c.result is None else c.result
    )
    if row is None:
        return False
    await note_completed(conn, row, usage_tokens=c.usage_tokens)  # before slots: lock order
    await _left_running(conn, row, extra=c.event_data)
    return True


async def fail(
    conn: AsyncConnection,
    lease: Lease,
    error: BaseException | str,
    *,
    category: ErrorCategory = ErrorCategory.PERMANENT,
) -> bool:
    """`running → failed` at once (the dead-letter state); the error is kept."""
    row = await _finish(conn, lease, JobStatus.FAILED, last_error=error_text(category, error))
    if row is None:
        return False
    await _left_running(
        conn, row, category=category, error=error, extra={"error": error_text(category, error)}
    )
    return True


async def retry_later(
    conn: AsyncConnection,
    lease: Lease,
    *,
    delay_seconds: float,
    error: BaseException | str | None = None,
    category: ErrorCategory = ErrorCategory.TRANSIENT,
    refund_attempt: bool = False,
    reason: str | None = None,
    block_bucket_seconds: float | Callable[[], float] | None = None,
) -> JobStatus | None:
    """`running → queued` to run again after `delay_seconds` (by the database clock).

    `refund_attempt` takes back the attempt the claim counted (rate limits, graceful
    shutdown: not the job's fault). A job whose cancellation was requested goes to
    `cancelled` instead. `block_bucket_seconds` (a 429) blocks the job's rate bucket that
    long, counts the 429 and cuts its adaptive concurrency; a function is asked once the
    bucket is locked (the wait left then). Returns the new status, or None if the lease was
    lost.
    """
    dialect = conn.dialect.name
    cancelled = jobs.c.cancel_requested.is_(True)
    values: dict[str, Any] = {
        "status": case((cancelled, JobStatus.CANCELLED.value), else_=JobStatus.QUEUED.value),
        "finished_at": case((cancelled, db_now(dialect)), else_=null()),
        "run_at": db_now_plus(dialect, delay_seconds),
        "lease_token": None,
        "lease_expires_at": None,
    }
    if refund_attempt:
        values["attempts"] = jobs.c.attempts - 1
    if error is not None:
        values["last_error"] = error_text(category, error)
    row = (
        await conn.execute(
            update(jobs)
            .where(*_mine(lease, JobStatus.QUEUED, JobStatus.CANCELLED))
            .values(values)
            .returning(*LEFT_RUNNING_COLUMNS)
        )
    ).first()
    if row is None:
        return None
    if block_bucket_seconds is not None:
        await note_rate_limited(conn, row, retry_after=block_bucket_seconds)  # before slots
    await _left_running(
        conn,
        row,
        category=category,
        error=error,
        refunded=refund_attempt,
        extra={
            "reason": reason or (category.value if error is not None else None),
            "delay_seconds": round(delay_seconds, 3),
            "error": None if error is None else error_text(category, error),
        },
    )
    return JobStatus(row.status)


async def release(conn: AsyncConnection, lease: Lease) -> bool:
    """Give a job back untouched (graceful shutdown): queued now, its attempt refunded."""
    status = await retry_later(
        conn, lease, delay_seconds=0.0, refund_attempt=True, reason="released"
    )
    if status is JobStatus.QUEUED:
        await notify_jobs(conn)  # another worker may take it at once
    return status is not None


async def cancel(conn: AsyncConnection, lease: Lease) -> bool:
    """`running → cancelled`: the worker acknowledges a requested cancellation."""
    row = await _finish(conn, lease, JobStatus.CANCELLED)
    if row is None:
        return False
    await _left_running(conn, row)
    return True


async def settle_error(
    conn: AsyncConnection,
    job: Job,
    exc: BaseException,
    *,
    settings: QueueSettings,
    rng: random.Random | None = None,
) -> JobStatus | None:
    """Apply the error policy to a failed attempt; returns the job's new status (None: lease lost).

    Rate limited → queued after what is left of `retry_after` (counted from the 429), attempt
    refunded, the job's rate bucket blocked until then (its 429 counted, its adaptive
    concurrency cut). Permanent → failed.
    Anything else → queued after a full-jitter backoff, or failed once attempts are spent.
    """
    if isinstance(exc, Snooze):
        return await retry_later(
            conn, job.lease, delay_seconds=exc.delay, refund_attempt=True, reason=exc.reason
        )
    category = classify(exc)
    if isinstance(exc, RateLimited):
        wait = exc.remaining()
        return await retry_later(
            conn,
            job.lease,
            delay_seconds=wait,
            error=exc,
            category=category,
            refund_attempt=True,
            block_bucket_seconds=exc.remaining,  # asked again once the bucket is locked
        )
    if category is ErrorCategory.PERMANENT or job.attempts >= job.max_attempts:
        ok = await fail(conn, job.lease, exc, category=category)
        return JobStatus.FAILED if ok else None
    delay = backoff_seconds(
        job.attempts,
        base=settings.retry_base_seconds,
        cap=settings.retry_cap_seconds,
        rng=rng,
    )
    return await retry_later(conn, job.lease, delay_seconds=delay, error=exc, category=category)
