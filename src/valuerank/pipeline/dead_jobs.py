"""The organisation's dead jobs as people read them: each failed job with every error it met,
and the run it belongs to — its own partition (probes, judges, summaries, finalize) or the run's
analysis partition (`analysis:<run id>`). The queue knows partitions only; this names them.

Used by `GET /api/queue/jobs/failed` and the queue page. Retrying goes through the run's
lifecycle (`runs.service.retry_failed_job`, `rerun_failed`), so a finished run reopens.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import runs
from valuerank.queue.dialect import iso
from valuerank.queue.errors import JobErrorRecord, errors_of_jobs
from valuerank.queue.job import Job, failed_per_partition, list_failed_jobs
from valuerank.runs.kinds import job_kind
from valuerank.runs.partitions import ANALYSIS_PREFIX, analysis_partition

Part = Literal["run", "analysis"]


@dataclass(frozen=True)
class PartitionLabel:
    """What a partition is: a run's own jobs, its analyses, or something else (None)."""

    partition: str
    run_id: str | None = None
    run_name: str | None = None
    part: Part | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "run_id": self.run_id,
            "run_name": self.run_name,
            "part": self.part,
        }


async def partition_labels(
    conn: AsyncConnection, org_id: str, partitions: Iterable[str]
) -> dict[str, PartitionLabel]:
    """A label for each partition (one query for the run names)."""
    keys = set(partitions)
    run_of = {
        key: key.removeprefix(ANALYSIS_PREFIX) if key.startswith(ANALYSIS_PREFIX) else key
        for key in keys
    }
    names: dict[str, str] = {}
    if keys:
        rows = await conn.execute(
            select(runs.c.id, runs.c.name).where(
                runs.c.org_id == org_id, runs.c.id.in_(set(run_of.values()))
            )
        )
        names = {run_id: name for run_id, name in rows}
    labels = {}
    for key, run_id in run_of.items():
        if run_id in names:
            part: Part = "analysis" if key.startswith(ANALYSIS_PREFIX) else "run"
            labels[key] = PartitionLabel(key, run_id, names[run_id], part)
        else:
            labels[key] = PartitionLabel(key)
    return labels


def _error_dict(error: JobErrorRecord) -> dict[str, Any]:
    return {
        "attempt": error.attempt,
        "category": error.category.value,
        "error_class": error.error_class,
        "message": error.message,
        "at": iso(error.created_at),
    }


@dataclass(frozen=True)
class DeadJob:
    job: Job
    label: PartitionLabel
    errors: list[JobErrorRecord]

    def to_dict(self) -> dict[str, Any]:
        job = self.job
        return {
            "id": job.id,
            "kind": job.kind,
            **self.label.to_dict(),
            "item_key": job.item_key,
            "provider": job.provider,
            "model": job.model,
            "attempts": job.attempts,
            "max_attempts": job.max_attempts,
            "last_error": job.last_error,
            "errors": [_error_dict(e) for e in self.errors],
            "created_at": iso(job.created_at),
            "finished_at": iso(job.finished_at),
        }


@dataclass(frozen=True)
class FailedGroup:
    """The failed jobs of one partition (a run's, its analyses', or another)."""

    label: PartitionLabel
    count: int

    def to_dict(self) -> dict[str, Any]:
        return {**self.label.to_dict(), "count": self.count}


async def dead_jobs(
    conn: AsyncConnection,
    org_id: str,
    *,
    run_id: str | None = None,
    kind: str | None = None,
    before_id: str | None = None,
    limit: int = 100,
) -> list[DeadJob]:
    """The organisation's failed jobs, newest first, with their errors and runs; with
    `run_id`, that run's (its own partition and its analyses'); with `kind`, of that kind
    (our name or the seed's, e.g. `probe:scenario`)."""
    partitions = None if run_id is None else [run_id, analysis_partition(run_id)]
    found = await list_failed_jobs(
        conn,
        org_id=org_id,
        partitions=partitions,
        kind=None if kind is None else job_kind(kind),
        before_id=before_id,
        limit=limit,
    )
    labels = await partition_labels(conn, org_id, {job.partition for job in found})
    errors = await errors_of_jobs(conn, [job.id for job in found], org_id=org_id)
    return [DeadJob(job, labels[job.partition], errors.get(job.id, [])) for job in found]


async def failed_groups(conn: AsyncConnection, org_id: str) -> list[FailedGroup]:
    """How many failed jobs each partition holds, most first."""
    counts = await failed_per_partition(conn, org_id=org_id)
    labels = await partition_labels(conn, org_id, counts)
    groups = [FailedGroup(labels[key], n) for key, n in counts.items()]
    return sorted(groups, key=lambda g: (-g.count, g.label.partition))
