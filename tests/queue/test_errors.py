"""Error policy: transient backoff, rate limits without spending attempts, permanent failures,
dead letters after max_attempts, and every error kept."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

import pytest

from valuerank.queue import (
    ErrorCategory,
    JobStatus,
    Permanent,
    QueueSettings,
    RateLimited,
    Transient,
    errors_of,
    settle_error,
)
from valuerank.queue.errors import backoff_seconds, classify

if TYPE_CHECKING:
    from tests.queue.conftest import Kit

BACKOFF = QueueSettings(
    lease_seconds=30, heartbeat_seconds=1, retry_base_seconds=100, retry_cap_seconds=1000
)


def test_classification() -> None:
    assert classify(RateLimited(retry_after=3)) is ErrorCategory.RATE_LIMITED
    assert classify(Permanent("400")) is ErrorCategory.PERMANENT
    assert classify(Transient("503")) is ErrorCategory.TRANSIENT
    assert classify(KeyError("bug")) is ErrorCategory.TRANSIENT  # unknown = transient


@pytest.mark.parametrize("attempt", [1, 2, 3, 8, 20])
def test_full_jitter_stays_under_the_exponential_ceiling(attempt: int) -> None:
    rng = random.Random(attempt)
    ceiling = min(60.0, 2.0 * 2 ** (attempt - 1))
    delays = [backoff_seconds(attempt, base=2, cap=60, rng=rng) for _ in range(500)]
    assert all(0 <= d <= ceiling for d in delays)
    assert max(delays) > ceiling * 0.8  # jitter really spans the range
    assert min(delays) < ceiling * 0.2


async def _settle(kit: Kit, exc: BaseException, settings: QueueSettings) -> JobStatus | None:
    (job,) = await kit.take()
    async with kit.db.transaction(immediate=True) as conn:
        return await settle_error(conn, job, exc, settings=settings, rng=random.Random(1))


async def test_transient_error_backs_off_and_keeps_the_attempt(kit: Kit) -> None:
    (job_id,) = await kit.put(max_attempts=3)
    assert await _settle(kit, Transient("timeout"), BACKOFF) is JobStatus.QUEUED
    job = await kit.load(job_id)
    assert job.attempts == 1
    assert job.last_error == "transient: Transient: timeout"
    assert job.started_at is not None and job.run_at > job.started_at  # later, by jitter
    assert await kit.take() == []  # not runnable yet
    (event,) = [e for e in await kit.events() if e.type == "task_retrying"]
    assert 0 < event.data["delay_seconds"] <= 100


async def test_rate_limited_does_not_spend_an_attempt(kit: Kit) -> None:
    (job_id,) = await kit.put(max_attempts=1)
    for _ in range(3):
        status = await _settle(kit, RateLimited("429", retry_after=0), BACKOFF)
        assert status is JobStatus.QUEUED
    job = await kit.load(job_id)
    assert job.status is JobStatus.QUEUED and job.attempts == 0
    async with kit.db.transaction() as conn:
        errors = await errors_of(conn, job_id)
    assert [e.category for e in errors] == [ErrorCategory.RATE_LIMITED] * 3
    assert [e.attempt for e in errors] == [1, 1, 1]


async def test_rate_limit_reschedules_at_the_reset(kit: Kit) -> None:
    (job_id,) = await kit.put()
    await _settle(kit, RateLimited(retry_after=3600), BACKOFF)
    assert await kit.take() == []
    job = await kit.load(job_id)
    assert job.started_at is not None
    assert 3590 < (job.run_at - job.started_at).total_seconds() < 3610


async def test_permanent_error_fails_at_once(kit: Kit) -> None:
    (job_id,) = await kit.put(max_attempts=5)
    assert await _settle(kit, Permanent("400 bad request"), BACKOFF) is JobStatus.FAILED
    job = await kit.load(job_id)
    assert job.status is JobStatus.FAILED and job.attempts == 1
    assert job.last_error == "permanent: Permanent: 400 bad request"


async def test_a_poison_job_ends_failed_with_every_error_kept(kit: Kit) -> None:
    (job_id,) = await kit.put(max_attempts=4)
    outcomes = [await _settle(kit, ValueError(f"boom {n}"), kit.settings) for n in range(4)]
    assert outcomes == [JobStatus.QUEUED] * 3 + [JobStatus.FAILED]
    job = await kit.load(job_id)
    assert job.status is JobStatus.FAILED and job.attempts == 4
    async with kit.db.transaction() as conn:
        errors = await errors_of(conn, job_id, org_id=kit.org_id)
    assert [(e.attempt, e.error_class, e.message) for e in errors] == [
        (n + 1, "ValueError", f"boom {n}") for n in range(4)
    ]
    assert await kit.take() == []  # dead letter: nothing runs it again by itself
