"""The transition table is the only way a job's status changes; everything else is refused."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from valuerank.db.tables import jobs
from valuerank.queue import InvalidTransition, JobStatus, cancel_job, complete, requeue_failed
from valuerank.queue.job import Lease
from valuerank.queue.states import (
    TERMINAL,
    TRANSITIONS,
    can_transition,
    require_transition,
    sources_of,
    status_guard,
)

if TYPE_CHECKING:
    from tests.queue.conftest import Kit

Q, R, S, F, C = (
    JobStatus.QUEUED,
    JobStatus.RUNNING,
    JobStatus.SUCCEEDED,
    JobStatus.FAILED,
    JobStatus.CANCELLED,
)


def test_the_table() -> None:
    assert TRANSITIONS[Q] == {R, C}
    assert TRANSITIONS[R] == {S, F, C, Q}
    assert TRANSITIONS[F] == {Q}
    assert TRANSITIONS[S] == TRANSITIONS[C] == set()
    assert sources_of(Q) == {R, F}
    assert {S, F, C} == TERMINAL


@pytest.mark.parametrize(
    ("source", "target"), [(Q, S), (Q, F), (S, Q), (C, Q), (S, R), (F, R), (R, R), (F, C)]
)
def test_transitions_outside_the_table_are_refused(source: JobStatus, target: JobStatus) -> None:
    assert not can_transition(source, target)
    with pytest.raises(InvalidTransition) as info:
        require_transition(source, target)
    assert info.value.code == "INVALID_TRANSITION"
    assert info.value.http_status == 409


def test_a_guard_cannot_name_a_source_the_table_forbids() -> None:
    with pytest.raises(InvalidTransition):
        status_guard(jobs, S, sources=[Q])
    sql = str(status_guard(jobs, Q).compile(compile_kwargs={"literal_binds": True}))
    assert "'failed'" in sql and "'running'" in sql and "'queued'" not in sql


async def test_the_database_refuses_what_the_table_refuses(kit: Kit) -> None:
    (done,) = await kit.put(prefix="d")
    (queued,) = await kit.put(prefix="q")
    (job,) = await kit.take(kinds=["echo"])  # the oldest: `done`
    assert job.id == done
    async with kit.db.transaction(immediate=True) as conn:
        assert await complete(conn, job.lease, {"ok": True})
        # A queued job cannot be completed, even with a plausible token.
        assert not await complete(conn, Lease(queued, job.lease.token), {"ok": True})
        with pytest.raises(InvalidTransition, match="succeeded to queued"):
            await requeue_failed(conn, kit.org_id, job_id=done)
        with pytest.raises(InvalidTransition, match="succeeded to cancelled"):
            await cancel_job(conn, kit.org_id, done)
    assert (await kit.load(queued)).status is Q
    assert (await kit.load(done)).status is S
