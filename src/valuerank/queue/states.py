"""Job statuses and the one table of allowed transitions.

Every UPDATE that changes a job's status takes its `WHERE status IN (…)` from `status_guard`,
so the table below is the only place a transition is written.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Any

from sqlalchemy import Table
from sqlalchemy.sql.elements import ColumnElement

from valuerank.errors import ConflictError


class JobStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"  # also the dead-letter state: requeue it by hand
    CANCELLED = "cancelled"


TRANSITIONS: dict[JobStatus, frozenset[JobStatus]] = {
    JobStatus.QUEUED: frozenset({JobStatus.RUNNING, JobStatus.CANCELLED}),
    JobStatus.RUNNING: frozenset(
        {JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED, JobStatus.QUEUED}
    ),
    JobStatus.FAILED: frozenset({JobStatus.QUEUED}),
    JobStatus.SUCCEEDED: frozenset(),
    JobStatus.CANCELLED: frozenset(),
}

TERMINAL: frozenset[JobStatus] = frozenset(
    {JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED}
)
ACTIVE: frozenset[JobStatus] = frozenset({JobStatus.QUEUED, JobStatus.RUNNING})


class InvalidTransition(ConflictError):
    """A job cannot move from its status to the one asked for."""

    code = "INVALID_TRANSITION"


def can_transition(source: JobStatus, target: JobStatus) -> bool:
    return target in TRANSITIONS[source]


def require_transition(source: JobStatus | str, target: JobStatus | str) -> None:
    """Raise `InvalidTransition` unless `source → target` is in the table."""
    src, dst = JobStatus(source), JobStatus(target)
    if not can_transition(src, dst):
        allowed = sorted(s.value for s in sources_of(dst))
        raise InvalidTransition(
            f"a job cannot go from {src.value} to {dst.value}",
            hint=f"only {', '.join(allowed) or 'no'} jobs can become {dst.value}",
        )


def sources_of(target: JobStatus) -> frozenset[JobStatus]:
    """Every status from which `target` may be reached."""
    return frozenset(src for src, targets in TRANSITIONS.items() if target in targets)


def status_guard(
    table: Table, target: JobStatus, *, sources: Iterable[JobStatus] | None = None
) -> ColumnElement[bool]:
    """`status IN (…)` for an UPDATE that moves rows to `target`.

    `sources` narrows the allowed sources (e.g. only `running` for a lease-guarded finish);
    naming a source the table does not allow is a programming error and raises at once.
    """
    if sources is None:
        chosen = sources_of(target)
    else:
        chosen = frozenset(sources)
        for src in chosen:
            require_transition(src, target)
    column: Any = table.c.status
    return column.in_(sorted(s.value for s in chosen))  # type: ignore[no-any-return]
