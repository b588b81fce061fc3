"""The organisation's dead jobs as people read them: each failed job with every error it met,
and the run it belongs to — its own partition (probes, judges, summaries, finalize) or the run's
analysis partition (`analysis:<run id>`). The queue knows partitions only; this names them.

Used by `GET /api/queue/jobs/failed` and the queue page. Retrying goes through the run's
lifecycle (`runs.service.retry_failed_job`, `rerun_failed`), so a finished run reopens.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, SkipValidation, computed_field
from pydantic.dataclasses import dataclass
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import runs
from valuerank.queue.errors import JobErrorRecord, errors_of_jobs
from valuerank.queue.job import Job, failed_per_partition, list_failed_jobs
from valuerank.runs.kinds import job_kind
from valuerank.runs.partitions import ANALYSIS_PREFIX, analysis_partition
from valuerank.shapes import SHAPE, Timestamp

Part = Literal["run", "analysis"]


@dataclass(frozen=True, config=SHAPE)
class PartitionLabel:
    """What a partition is: a run's own jobs, its analyses, or something else (None)."""

    partition: str
    run_id: str | None = None
    run_name: str | None = None
    part: Annotated[
        Part | None,
        Field(description="`run`: the run's own jobs; `analysis`: its analyses'; null: no run's."),
    ] = None


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


@dataclass(frozen=True, config=SHAPE)
class DeadJob:
    """A failed job of the organisation (the dead-letter state) with every attempt's error
    (`GET /api/queue/jobs/failed` writes and documents it; the queue page reads it)."""

    job: Annotated[SkipValidation[Job], Field(exclude=True)]
    label: Annotated[PartitionLabel, Field(exclude=True)]
    errors: list[JobErrorRecord]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def id(self) -> str:
        return self.job.id

    @computed_field  # type: ignore[prop-decorator]
    @property
    def kind(self) -> str:
        return self.job.kind

    @computed_field  # type: ignore[prop-decorator]
    @property
    def partition(self) -> str:
        return self.label.partition

    @computed_field  # type: ignore[prop-decorator]
    @property
    def run_id(self) -> str | None:
        return self.label.run_id

    @computed_field  # type: ignore[prop-decorator]
    @property
    def run_name(self) -> str | None:
        return self.label.run_name

    @computed_field(  # type: ignore[prop-decorator]
        description="`run`: the run's own jobs; `analysis`: its analyses'; null: no run's."
    )
    @property
    def part(self) -> Part | None:
        return self.label.part

    @computed_field  # type: ignore[prop-decorator]
    @property
    def item_key(self) -> str:
        return self.job.item_key

    @computed_field  # type: ignore[prop-decorator]
    @property
    def provider(self) -> str | None:
        return self.job.provider

    @computed_field  # type: ignore[prop-decorator]
    @property
    def model(self) -> str | None:
        return self.job.model

    @computed_field  # type: ignore[prop-decorator]
    @property
    def attempts(self) -> int:
        return self.job.attempts

    @computed_field  # type: ignore[prop-decorator]
    @property
    def max_attempts(self) -> int:
        return self.job.max_attempts

    @computed_field  # type: ignore[prop-decorator]
    @property
    def last_error(self) -> str | None:
        return self.job.last_error

    @computed_field(return_type=Timestamp)  # type: ignore[prop-decorator]
    @property
    def created_at(self) -> datetime:
        return self.job.created_at

    @computed_field(return_type=Timestamp | None)  # type: ignore[prop-decorator]
    @property
    def finished_at(self) -> datetime | None:
        return self.job.finished_at


@dataclasses.dataclass(frozen=True)
class FailedGroup:
    """The failed jobs of one partition (a run's, its analyses', or another)."""

    label: PartitionLabel
    count: int


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
