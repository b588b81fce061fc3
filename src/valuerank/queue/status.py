"""A snapshot of the queue for operators and dashboards: counts, providers, partitions, age."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import jobs, queue_controls
from valuerank.queue.controls import GLOBAL_KEY, ControlScope
from valuerank.queue.dialect import db_now, seconds_since
from valuerank.queue.slots import Cap, list_caps
from valuerank.queue.states import ACTIVE, JobStatus


@dataclass
class ProviderStatus:
    queue_length: int = 0
    in_flight: int = 0
    paused: bool = False


@dataclass
class PartitionStatus:
    counts: dict[str, int] = field(default_factory=dict)
    paused: bool = False
    cancelled: bool = False


@dataclass
class QueueStatus:
    counts: dict[str, int]
    providers: dict[str, ProviderStatus]
    partitions: dict[str, PartitionStatus]  # those with queued/running jobs, or paused
    oldest_waiting_seconds: float | None  # the longest a runnable job has been waiting
    paused: bool
    caps: list[Cap]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["caps"] = [asdict(c) | {"scope": c.scope.value} for c in self.caps]
        return data


async def queue_status(conn: AsyncConnection, *, org_id: str | None = None) -> QueueStatus:
    """Counts per status, per provider and per live partition, and the oldest wait.

    With `org_id`, only that organisation's jobs are counted (caps and pauses are global).
    """
    dialect = conn.dialect.name
    scoped = [] if org_id is None else [jobs.c.org_id == org_id]
    rows = await conn.execute(
        select(jobs.c.status, jobs.c.provider, jobs.c.partition, func.count())
        .where(*scoped)
        .group_by(jobs.c.status, jobs.c.provider, jobs.c.partition)
    )
    counts = {s.value: 0 for s in JobStatus}
    providers: dict[str, ProviderStatus] = {}
    partitions: dict[str, PartitionStatus] = {}
    for status, provider, partition, n in rows:
        counts[status] = counts.get(status, 0) + n
        part = partitions.setdefault(partition, PartitionStatus())
        part.counts[status] = part.counts.get(status, 0) + n
        if provider is not None:
            prov = providers.setdefault(provider, ProviderStatus())
            if status == JobStatus.QUEUED:
                prov.queue_length += n
            elif status == JobStatus.RUNNING:
                prov.in_flight += n

    controls = await conn.execute(
        select(
            queue_controls.c.scope,
            queue_controls.c.key,
            queue_controls.c.org_id,
            queue_controls.c.paused,
            queue_controls.c.cancel_requested,
        )
    )
    globally_paused = False
    for scope, key, control_org, paused, cancelled in controls:
        if scope == ControlScope.GLOBAL and key == GLOBAL_KEY:
            globally_paused = bool(paused)
        elif scope == ControlScope.PROVIDER and paused:
            providers.setdefault(key, ProviderStatus()).paused = True
        elif (
            scope == ControlScope.PARTITION
            and (org_id is None or control_org == org_id)
            and (key in partitions or paused)
        ):
            part = partitions.setdefault(key, PartitionStatus())
            part.paused, part.cancelled = bool(paused), bool(cancelled)
    live = {
        key: part
        for key, part in partitions.items()
        if part.paused or any(part.counts.get(s.value) for s in ACTIVE)
    }
    oldest = await conn.scalar(
        select(func.max(seconds_since(dialect, jobs.c.run_at))).where(
            *scoped,
            jobs.c.status == JobStatus.QUEUED.value,
            jobs.c.run_at <= db_now(dialect),
        )
    )
    return QueueStatus(
        counts=counts,
        providers=dict(sorted(providers.items())),
        partitions=dict(sorted(live.items())),
        oldest_waiting_seconds=None if oldest is None else max(float(oldest), 0.0),
        paused=globally_paused,
        caps=await list_caps(conn),
    )
