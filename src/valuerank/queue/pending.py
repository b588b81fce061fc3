"""What is still to come for some partitions: when their next queued job falls due.

Burst mode (`Worker.run_until_idle`) asks this before it exits, so a partition it worked on
is not left behind with a job snoozed or retried a moment later (a run's finalize step, a
transient error's backoff). Jobs that nothing will claim are not counted: those of a paused
partition, of a paused provider or organisation, or any while the whole queue is paused.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from sqlalchemy import and_, exists, func, select
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.expression import Exists

from valuerank.db.tables import jobs, queue_controls
from valuerank.queue.dialect import seconds_since
from valuerank.queue.events import PARTITION_SCOPE
from valuerank.queue.states import JobStatus


def _paused(scope: str, key: Any) -> Exists:
    return exists().where(
        queue_controls.c.scope == scope,
        queue_controls.c.key == key,
        queue_controls.c.paused.is_(True),
    )


async def seconds_until_due(
    conn: AsyncConnection, partitions: Collection[str], kinds: Collection[str] | None = None
) -> float | None:
    """Seconds until the earliest claimable queued job of `partitions` (of `kinds`) is due,
    by the database clock (0 or less: due now); None when there is none."""
    if not partitions:
        return None
    dialect = conn.dialect.name
    conditions = [
        jobs.c.status == JobStatus.QUEUED.value,
        jobs.c.partition.in_(sorted(partitions)),
        ~_paused(PARTITION_SCOPE, jobs.c.partition),
        ~and_(jobs.c.provider.is_not(None), _paused("provider", jobs.c.provider)),
        ~_paused("global", "*"),
        ~_paused("org", jobs.c.org_id),
    ]
    if kinds is not None:
        conditions.append(jobs.c.kind.in_(sorted(kinds)))
    earliest = select(seconds_since(dialect, func.min(jobs.c.run_at))).where(*conditions)
    ago = await conn.scalar(earliest)
    return None if ago is None else -float(ago)
