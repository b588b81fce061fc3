"""What a claimed or stored job looks like to Python code, and how to read one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Row, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import jobs
from valuerank.errors import NotFoundError
from valuerank.queue.dialect import as_utc
from valuerank.queue.states import JobStatus

# What a statement that moves a job out of `running` returns: enough to release its slots
# and write its event (used by completion, failure, cancellation and the reaper).
LEFT_RUNNING_COLUMNS = (
    jobs.c.id,
    jobs.c.org_id,
    jobs.c.partition,
    jobs.c.item_key,
    jobs.c.kind,
    jobs.c.status,
    jobs.c.attempts,
    jobs.c.provider,
    jobs.c.model,
    jobs.c.slot_keys,
)


@dataclass(frozen=True)
class Lease:
    """The fencing token of one attempt: finishing a job requires presenting it."""

    job_id: str
    token: str


@dataclass
class Job:
    """One job. `cancel_requested` is kept current by the worker's heartbeat, so a
    cooperative handler can stop early by looking at it."""

    id: str
    org_id: str
    partition: str
    item_key: str
    kind: str
    payload: Any
    status: JobStatus
    priority: int
    run_at: datetime
    attempts: int
    max_attempts: int
    provider: str | None
    model: str | None
    lease_token: str | None
    lease_expires_at: datetime | None
    locked_by: str | None
    cancel_requested: bool
    result: Any
    last_error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    slot_keys: list[str] = field(default_factory=list)

    @property
    def lease(self) -> Lease:
        if self.lease_token is None:
            raise ValueError(f"job {self.id} holds no lease (status {self.status.value})")
        return Lease(self.id, self.lease_token)


def _opt_ts(value: datetime | None) -> datetime | None:
    return None if value is None else as_utc(value)


def job_from_row(row: Row[Any] | Mapping[str, Any]) -> Job:
    """A `Job` from a row of the jobs table (or a mapping of its columns)."""
    m = row if isinstance(row, Mapping) else row._mapping
    return Job(
        id=m["id"],
        org_id=m["org_id"],
        partition=m["partition"],
        item_key=m["item_key"],
        kind=m["kind"],
        payload=m["payload"],
        status=JobStatus(m["status"]),
        priority=m["priority"],
        run_at=as_utc(m["run_at"]),
        attempts=m["attempts"],
        max_attempts=m["max_attempts"],
        provider=m["provider"],
        model=m["model"],
        lease_token=m["lease_token"],
        lease_expires_at=_opt_ts(m["lease_expires_at"]),
        locked_by=m["locked_by"],
        cancel_requested=bool(m["cancel_requested"]),
        result=m["result"],
        last_error=m["last_error"],
        created_at=as_utc(m["created_at"]),
        started_at=_opt_ts(m["started_at"]),
        finished_at=_opt_ts(m["finished_at"]),
        slot_keys=list(m["slot_keys"] or []),
    )


async def get_job(conn: AsyncConnection, job_id: str, *, org_id: str | None = None) -> Job:
    """A job by id; with `org_id`, only if it belongs to that organisation."""
    query = select(jobs).where(jobs.c.id == job_id)
    if org_id is not None:
        query = query.where(jobs.c.org_id == org_id)
    row = (await conn.execute(query)).first()
    if row is None:
        raise NotFoundError(f"no job with id {job_id!r}")
    return job_from_row(row)


async def list_jobs(
    conn: AsyncConnection,
    *,
    org_id: str,
    partition: str | None = None,
    status: JobStatus | None = None,
    limit: int = 1000,
) -> list[Job]:
    """Jobs of an organisation, oldest first."""
    query = select(jobs).where(jobs.c.org_id == org_id)
    if partition is not None:
        query = query.where(jobs.c.partition == partition)
    if status is not None:
        query = query.where(jobs.c.status == status.value)
    rows = await conn.execute(query.order_by(jobs.c.created_at, jobs.c.id).limit(limit))
    return [job_from_row(r) for r in rows]


async def list_failed_jobs(
    conn: AsyncConnection,
    *,
    org_id: str,
    partitions: Sequence[str] | None = None,
    kind: str | None = None,
    before_id: str | None = None,
    limit: int = 100,
) -> list[Job]:
    """The organisation's failed jobs (the dead letters: attempts spent or a permanent
    error), newest first (ids are time-ordered), optionally of some partitions or one kind
    only, before `before_id` (the keyset of the next page)."""
    query = select(jobs).where(jobs.c.org_id == org_id, jobs.c.status == JobStatus.FAILED.value)
    if partitions is not None:
        query = query.where(jobs.c.partition.in_(list(partitions)))
    if kind is not None:
        query = query.where(jobs.c.kind == kind)
    if before_id is not None:
        query = query.where(jobs.c.id < before_id)
    rows = await conn.execute(query.order_by(jobs.c.id.desc()).limit(limit))
    return [job_from_row(r) for r in rows]


async def failed_per_partition(conn: AsyncConnection, *, org_id: str) -> dict[str, int]:
    """How many failed jobs each partition of the organisation holds (none: left out)."""
    rows = await conn.execute(
        select(jobs.c.partition, func.count())
        .where(jobs.c.org_id == org_id, jobs.c.status == JobStatus.FAILED.value)
        .group_by(jobs.c.partition)
    )
    return {partition: int(n) for partition, n in rows}
