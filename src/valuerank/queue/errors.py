"""How a handler's failure is classified, how long a retry waits, and where errors are kept.

Handlers raise `RateLimited`, `Transient` or `Permanent`; anything else counts as transient
(a bug that fails every time still ends `failed` after `max_attempts`). Every error is kept
in `job_errors`, one row per failed attempt, whatever happens to the job afterwards.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from enum import StrEnum
from time import monotonic
from typing import Annotated

from pydantic import Field
from pydantic.dataclasses import dataclass as pydantic_dataclass
from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import job_errors
from valuerank.queue.dialect import as_utc, db_now
from valuerank.queue.ids import new_id
from valuerank.shapes import SHAPE, Timestamp

MAX_MESSAGE_CHARS = 4000


class JobError(Exception):
    """Base of the errors a handler raises to say how its failure should be treated."""


class RateLimited(JobError):
    """The provider said "slow down": requeue after `retry_after` seconds, counted from when
    this was raised (the answer's time), no attempt spent."""

    def __init__(self, message: str = "rate limited", *, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = max(float(retry_after), 0.0)
        self._raised = monotonic()

    def remaining(self) -> float:
        """Seconds of the wait still to run now. The outcome may be written a while after the
        429 (the 429s of every job in flight queue up on their provider's bucket): a wait
        counted from then would block the provider longer than it asked."""
        return max(self.retry_after - (monotonic() - self._raised), 0.0)


class Transient(JobError):
    """Worth retrying (timeouts, 5xx, lost connections): backoff, then try again."""


class Permanent(JobError):
    """Retrying cannot help (bad request, auth, unknown model): fail at once."""


class Snooze(JobError):
    """Not an error: the job is not ready yet (it waits for other jobs). Queued again after
    `delay` seconds with its attempt refunded and no error recorded."""

    def __init__(self, delay: float, reason: str = "waiting") -> None:
        super().__init__(reason)
        self.delay = max(float(delay), 0.0)
        self.reason = reason


class ErrorCategory(StrEnum):
    TRANSIENT = "transient"
    RATE_LIMITED = "rate_limited"
    PERMANENT = "permanent"
    LEASE_EXPIRED = "lease_expired"  # the worker vanished or stalled past its lease
    TIMEOUT = "timeout"  # ran longer than max runtime


def classify(exc: BaseException) -> ErrorCategory:
    if isinstance(exc, RateLimited):
        return ErrorCategory.RATE_LIMITED
    if isinstance(exc, Permanent):
        return ErrorCategory.PERMANENT
    return ErrorCategory.TRANSIENT


def backoff_seconds(
    attempt: int, *, base: float, cap: float, rng: random.Random | None = None
) -> float:
    """Exponential backoff with full jitter: uniform in [0, min(cap, base·2^(attempt-1))].

    Full jitter spreads the retries of many jobs that failed together (one provider outage)
    instead of sending them back in a synchronised wave.
    """
    ceiling = min(cap, base * 2.0 ** max(attempt - 1, 0))
    return (rng or random).uniform(0.0, ceiling)


def describe(error: BaseException | str) -> tuple[str, str]:
    """(class name, message) of an error, the message cut to a storable length."""
    if isinstance(error, str):
        return "Error", error[:MAX_MESSAGE_CHARS]
    message = str(error) or repr(error)
    return type(error).__name__, message[:MAX_MESSAGE_CHARS]


def error_text(category: ErrorCategory, error: BaseException | str) -> str:
    """One line for `jobs.last_error` and events: category, class and message."""
    error_class, message = describe(error)
    return f"{category.value}: {error_class}: {message}"


@pydantic_dataclass(frozen=True, config=SHAPE)
class JobErrorRecord:
    """One failed attempt's error, as kept (and as a dead job's `errors` show it)."""

    id: Annotated[str, Field(exclude=True)]
    job_id: Annotated[str, Field(exclude=True)]
    org_id: Annotated[str, Field(exclude=True)]
    attempt: int
    category: ErrorCategory
    error_class: str
    message: str
    created_at: Annotated[Timestamp, Field(serialization_alias="at")]


async def record_error(
    conn: AsyncConnection,
    *,
    job_id: str,
    org_id: str,
    attempt: int,
    category: ErrorCategory,
    error: BaseException | str,
) -> str:
    """Keep one error (a row per failed attempt); returns its id."""
    error_class, message = describe(error)
    error_id = new_id()
    await conn.execute(
        insert(job_errors).values(
            id=error_id,
            job_id=job_id,
            org_id=org_id,
            attempt=attempt,
            category=category.value,
            error_class=error_class,
            message=message,
            created_at=db_now(conn.dialect.name),
        )
    )
    return error_id


async def errors_of(
    conn: AsyncConnection, job_id: str, *, org_id: str | None = None
) -> list[JobErrorRecord]:
    """Every error of a job, in the order they happened."""
    return (await errors_of_jobs(conn, [job_id], org_id=org_id)).get(job_id, [])


async def errors_of_jobs(
    conn: AsyncConnection, job_ids: Sequence[str], *, org_id: str | None = None
) -> dict[str, list[JobErrorRecord]]:
    """Every error of each of the jobs (one query), in the order they happened; a job
    without errors is left out."""
    if not job_ids:
        return {}
    query = select(job_errors).where(job_errors.c.job_id.in_(list(job_ids)))
    if org_id is not None:
        query = query.where(job_errors.c.org_id == org_id)
    rows = await conn.execute(query.order_by(job_errors.c.created_at, job_errors.c.id))
    found: dict[str, list[JobErrorRecord]] = {}
    for r in rows:
        found.setdefault(r.job_id, []).append(
            JobErrorRecord(
                id=r.id,
                job_id=r.job_id,
                org_id=r.org_id,
                attempt=r.attempt,
                category=ErrorCategory(r.category),
                error_class=r.error_class,
                message=r.message,
                created_at=as_utc(r.created_at),
            )
        )
    return found
