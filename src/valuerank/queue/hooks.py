"""What an application tells the queue about its own partitions: `QueueHooks`.

The queue knows no runs. The package that owns some partitions (the runs package owns a
run's) may name the event that says one is finished (`run_complete` instead of
`partition_complete`), give it the work it still owes when its last job ends (a run's
finalize job), shape what webhooks get of its events, keep webhooks subscribed under
old topic names working, and keep what it needs of jobs that maintenance prunes.

Hooks are values, given explicitly to whoever runs the queue: a `Worker` (its `hooks`), the
app factory, the CLI. Whoever is given them puts them in effect for what it runs
(`using(hooks)`: a worker for its loops, the app for each request); the queue's functions,
however deep, read the hooks in effect (`hooks_in_use`). With none in effect nothing is
renamed, shaped or kept (`NO_HOOKS`). Nothing is registered by importing a module, so what a
process does never depends on what it happened to import.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Row
from sqlalchemy.ext.asyncio import AsyncConnection

Completion = tuple[str, dict[str, Any]]
CompletionNamer = Callable[[AsyncConnection, str, str], Awaitable[Completion | None]]
"""`(conn, org_id, partition)` → the completion event's type and extra data for a partition
its package owns, else None (the next namer, then `partition_complete`, is asked)."""

Published = tuple[str, dict[str, Any]]
Publisher = Callable[[AsyncConnection, str, str, str, dict[str, Any]], Awaitable[Published | None]]
"""`(conn, org_id, partition, type, data)` → the topic and data its webhooks get, for events
of partitions a package owns (else None: published as written)."""

PrunedObserver = Callable[[AsyncConnection, Sequence[Row[Any]]], Awaitable[None]]
"""`(conn, rows)`: the whole rows of the jobs `prune_jobs` deleted, in its transaction."""

Keeper = Callable[[AsyncConnection, str, str], Awaitable[bool]]
"""`(conn, org_id, partition)`, when its last job has ended: True when it enqueued the work
the partition still owes (so it is not finished), in the caller's transaction."""


def _unique(*groups: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(dict.fromkeys(item for group in groups for item in group))


@dataclass(frozen=True, eq=False)
class QueueHooks:
    """The callbacks of the packages that own partitions. Combine with `+`."""

    completion_namers: tuple[CompletionNamer, ...] = ()
    publishers: tuple[Publisher, ...] = ()
    # topic → its older names: a webhook subscribed to one of them gets the event too.
    topic_aliases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    pruned_observers: tuple[PrunedObserver, ...] = ()
    keepers: tuple[Keeper, ...] = ()

    def __add__(self, other: QueueHooks) -> QueueHooks:
        aliases = dict(self.topic_aliases)
        for topic, old in other.topic_aliases.items():
            aliases[topic] = _unique(aliases.get(topic, ()), old)
        return QueueHooks(
            completion_namers=_unique(self.completion_namers, other.completion_namers),
            publishers=_unique(self.publishers, other.publishers),
            topic_aliases=aliases,
            pruned_observers=_unique(self.pruned_observers, other.pruned_observers),
            keepers=_unique(self.keepers, other.keepers),
        )

    async def kept_open(self, conn: AsyncConnection, org_id: str, partition: str) -> bool:
        """Whether an owner enqueued what `partition` still owes, now that its jobs ended."""
        kept = False
        for keeper in self.keepers:
            kept = await keeper(conn, org_id, partition) or kept
        return kept

    async def completion(self, conn: AsyncConnection, org_id: str, partition: str) -> Completion:
        """The type and extra data of the event that says `partition` is finished."""
        for namer in self.completion_namers:
            named = await namer(conn, org_id, partition)
            if named is not None:
                return named
        return "partition_complete", {}

    async def publish(
        self, conn: AsyncConnection, org_id: str, partition: str, topic: str, data: dict[str, Any]
    ) -> Published:
        """The topic and data webhooks get of an event."""
        for publisher in self.publishers:
            published = await publisher(conn, org_id, partition, topic, data)
            if published is not None:
                return published
        return topic, data

    def aliases(self, topic: str) -> tuple[str, ...]:
        return self.topic_aliases.get(topic, ())

    async def pruned(self, conn: AsyncConnection, rows: Sequence[Row[Any]]) -> None:
        for observer in self.pruned_observers:
            await observer(conn, rows)


NO_HOOKS = QueueHooks()

_in_use: ContextVar[QueueHooks] = ContextVar("valuerank_queue_hooks", default=NO_HOOKS)


def hooks_in_use() -> QueueHooks:
    """The hooks whoever runs this code put in effect (`NO_HOOKS` if none)."""
    return _in_use.get()


@contextlib.contextmanager
def using(hooks: QueueHooks) -> Iterator[QueueHooks]:
    """Put `hooks` in effect for the block, and for the tasks started in it (they copy the
    context they are created in)."""
    token = _in_use.set(hooks)
    try:
        yield hooks
    finally:
        _in_use.reset(token)
