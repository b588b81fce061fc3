"""Queue hooks are given, not registered: a worker runs with the hooks it was given, another
worker in the same process without them is not touched by them, and hooks combine."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db import Database
from valuerank.queue import JobSpec, QueueSettings, Worker, enqueue, events_after
from valuerank.queue.builtin import NOOP, register_builtin_handlers
from valuerank.queue.hooks import NO_HOOKS, QueueHooks, hooks_in_use, using

FAST = QueueSettings(poll_seconds=0.02, heartbeat_seconds=0.05)


async def _named(conn: AsyncConnection, org_id: str, partition: str) -> tuple[str, dict[str, Any]]:
    return "batch_complete", {"named_by": "test"}


async def _finish(db: Database, org_id: str, partition: str, hooks: QueueHooks) -> str:
    async with db.transaction(immediate=True) as conn:
        await enqueue(conn, JobSpec(kind=NOOP, org_id=org_id, partition=partition))
    worker = register_builtin_handlers(Worker(db, settings=FAST, hooks=hooks))
    await worker.run_until_idle()
    async with db.transaction() as conn:
        log = await events_after(conn, partition, 0, 100)
    return str(log[-1].type)


async def test_a_worker_runs_with_the_hooks_it_was_given_and_no_other(
    db: Database, org_id: str
) -> None:
    named = QueueHooks(completion_namers=(_named,))
    assert await _finish(db, org_id, "batch-1", named) == "batch_complete"
    # The same process, a worker given no hooks: nothing was left registered.
    assert await _finish(db, org_id, "batch-2", NO_HOOKS) == "partition_complete"
    assert hooks_in_use() is NO_HOOKS


def test_hooks_combine_and_are_in_effect_only_where_put() -> None:
    one = QueueHooks(completion_namers=(_named,), topic_aliases={"a": ("old_a",)})
    two = QueueHooks(completion_namers=(_named,), topic_aliases={"a": ("older_a",), "b": ("c",)})
    both = one + two
    assert both.completion_namers == (_named,)  # the same hook once
    assert both.aliases("a") == ("old_a", "older_a") and both.aliases("b") == ("c",)
    with using(both):
        assert hooks_in_use() is both
    assert hooks_in_use() is NO_HOOKS
