"""A snapshot of the queue for operators and dashboards: counts, providers, partitions, age.

Its classes are answer shapes (`valuerank.shapes`): `GET /api/queue/status` and
`valuerank queue status --json` write them with `shapes.dump`, and /openapi.json documents
them from these very classes.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field
from pydantic.dataclasses import dataclass
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import jobs, queue_controls
from valuerank.queue.controls import GLOBAL_KEY, ControlScope
from valuerank.queue.dialect import db_now, seconds_since
from valuerank.queue.ratelimit import BucketState, list_buckets
from valuerank.queue.slots import Cap, SlotScope, list_caps
from valuerank.queue.states import ACTIVE, JobStatus
from valuerank.shapes import SHAPE, Timestamp


class RateLimitState(StrEnum):
    """A provider's rate limiting as its buckets stand now (the worst of them)."""

    NONE = "none"  # no bucket: nothing limits its requests
    OPEN = "open"  # every bucket can grant a request now
    EXHAUSTED = "exhausted"  # a bucket is out of requests/tokens or inside its spacing
    BLOCKED = "blocked"  # the provider said to wait (429 + reset): blocked until a time


@dataclass(frozen=True, config=SHAPE)
class BucketStatus:
    """One rate bucket of a provider (per model and credential; '' = all)."""

    model: str
    credential: str
    rpm_limit: float | None
    available_requests: float | None
    tpm_limit: float | None
    available_tokens: float | None
    blocked_until: Timestamp | None
    concurrency_limit: int | None
    rate_limited_total: int

    @classmethod
    def of(cls, b: BucketState) -> BucketStatus:
        def rounded(x: float | None) -> float | None:
            return None if x is None else round(x, 2)

        return cls(
            model=b.model,
            credential=b.credential,
            rpm_limit=b.rpm_limit,
            available_requests=rounded(b.available_requests),
            tpm_limit=b.tpm_limit,
            available_tokens=rounded(b.available_tokens),
            blocked_until=b.blocked_until if b.blocked else None,
            concurrency_limit=b.concurrency_limit,
            rate_limited_total=b.rate_limited_total,
        )


# Mutable while `queue_status` counts into them; each snapshot makes its own, so no answer
# shares them.
@dataclass(config=SHAPE)
class ProviderStatus:
    """A provider's jobs (the organisation's), pause and rate-limit state."""

    queue_length: int = 0
    in_flight: int = 0
    paused: bool = False
    rate_limit: RateLimitState = RateLimitState.NONE
    # The latest reset among its blocked buckets.
    blocked_until: Timestamp | None = None
    buckets: list[BucketStatus] = Field(default_factory=list)

    def add_bucket(self, bucket: BucketState) -> None:
        self.buckets.append(BucketStatus.of(bucket))
        if bucket.blocked:
            self.rate_limit = RateLimitState.BLOCKED
            until = bucket.blocked_until
            if self.blocked_until is None or (until is not None and until > self.blocked_until):
                self.blocked_until = until
        elif bucket.exhausted and self.rate_limit is not RateLimitState.BLOCKED:
            self.rate_limit = RateLimitState.EXHAUSTED
        elif self.rate_limit is RateLimitState.NONE:
            self.rate_limit = RateLimitState.OPEN


@dataclass(config=SHAPE)
class PartitionStatus:
    """A live partition (a run): its jobs per state, and whether it is paused or cancelled."""

    counts: dict[str, int] = Field(default_factory=dict)
    paused: bool = False
    cancelled: bool = False


@dataclass(frozen=True, config=SHAPE)
class QueueStatus:
    """The queue as it stands: jobs per state, per provider and per live partition."""

    counts: Annotated[dict[str, int], Field(description="The organisation's jobs per state.")]
    providers: dict[str, ProviderStatus]
    partitions: Annotated[
        dict[str, PartitionStatus],
        Field(description="The organisation's live runs (queued or running jobs, or paused)."),
    ]
    # The longest a runnable job has been waiting.
    oldest_waiting_seconds: float | None
    paused: Annotated[bool, Field(description="The whole queue (every organisation) is paused.")]
    caps: list[Cap]
    org_paused: Annotated[bool, Field(description="This organisation's jobs are paused.")] = False


def _shown(cap: Cap, org_id: str | None) -> bool:
    """Caps shared by every organisation, and (asked for one) only its own organisation cap:
    another organisation's cap would show its id and its jobs in flight."""
    return org_id is None or cap.scope is not SlotScope.ORG or cap.org_id == org_id


async def queue_status(conn: AsyncConnection, *, org_id: str | None = None) -> QueueStatus:
    """Counts per status, per provider (with its rate-limit state) and per live partition,
    and the oldest wait.

    With `org_id`, only that organisation's jobs are counted, and of the organisation caps
    only its own is listed (global, provider and model caps and pauses are shared).
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
    globally_paused = this_org_paused = False
    for scope, key, control_org, paused, cancelled in controls:
        if scope == ControlScope.GLOBAL and key == GLOBAL_KEY:
            globally_paused = bool(paused)
        elif scope == ControlScope.ORG:
            this_org_paused = this_org_paused or (key == org_id and bool(paused))
        elif scope == ControlScope.PROVIDER and paused:
            providers.setdefault(key, ProviderStatus()).paused = True
        elif (
            scope == ControlScope.PARTITION
            and (org_id is None or control_org == org_id)
            and (key in partitions or paused)
        ):
            part = partitions.setdefault(key, PartitionStatus())
            part.paused, part.cancelled = bool(paused), bool(cancelled)
    # Buckets are shared by every organisation's jobs of a provider: always all of them.
    # Provider-wide buckets first ('' sorts first), then per model and credential.
    for bucket in sorted(await list_buckets(conn), key=lambda b: (b.model, b.credential)):
        providers.setdefault(bucket.provider, ProviderStatus()).add_bucket(bucket)
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
        caps=[c for c in await list_caps(conn) if _shown(c, org_id)],
        org_paused=this_org_paused,
    )
