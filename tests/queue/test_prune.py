"""Event retention: maintenance prunes old events of partitions that are done, keeps each
partition's last event (its end, with the counts), and keeps everything by default."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import update

from valuerank.db.tables import events
from valuerank.queue import complete
from valuerank.queue.dialect import db_now_plus
from valuerank.queue.events import Event
from valuerank.queue.maintenance import run_maintenance

if TYPE_CHECKING:
    from tests.queue.conftest import Kit

DAY = 86400.0


def _keys(found: list[Event]) -> list[tuple[int, str, dict[str, Any]]]:
    return [(e.seq, str(e.type), e.data) for e in found]


async def _finished_partition(kit: Kit, partition: str, n: int = 2) -> None:
    """A partition whose n jobs all succeeded: claimed, completed, and its end written."""
    await kit.put(n, partition=partition, prefix=partition)
    taken = await kit.take(n)
    async with kit.db.transaction(immediate=True) as conn:
        for job in taken:
            assert await complete(conn, job.lease)


async def _age_events(kit: Kit, partition: str, seconds: float) -> None:
    async with kit.db.transaction(immediate=True) as conn:
        ago = db_now_plus(conn.dialect.name, -seconds)
        await conn.execute(
            update(events).where(events.c.partition == partition).values(created_at=ago)
        )


async def test_old_events_of_finished_partitions_go_but_their_last_event_stays(kit: Kit) -> None:
    settings = kit.settings.model_copy(update={"event_retention_days": 7})
    await _finished_partition(kit, "run-old")
    old = await kit.events("run-old")
    assert old[-1].type == "partition_complete" and len(old) >= 4
    await _finished_partition(kit, "run-recent")
    recent = await kit.events("run-recent")
    await kit.put(2, partition="run-live", prefix="live")
    (one,) = await kit.take(1)
    async with kit.db.transaction(immediate=True) as conn:
        assert await complete(conn, one.lease)  # the other is still queued: a live partition
    live = await kit.events("run-live")
    assert live and live[-1].type != "partition_complete"
    for partition in ("run-old", "run-live"):
        await _age_events(kit, partition, 10 * DAY)
    await _age_events(kit, "run-recent", 6 * DAY)

    record = await run_maintenance(kit.db, settings)
    assert record is not None and record.status == "succeeded", record
    assert record.actions["pruned_events"] == len(old) - 1
    assert record.actions["more"] is False
    kept = await kit.events("run-old")
    # The end survives with its counts, and the partition keeps numbering after it.
    assert _keys(kept) == _keys(old[-1:])
    assert _keys(await kit.events("run-recent")) == _keys(recent)
    assert _keys(await kit.events("run-live")) == _keys(live)

    again = await run_maintenance(kit.db, settings)
    assert again is not None and again.actions["pruned_events"] == 0


async def test_events_are_kept_by_default(kit: Kit) -> None:
    assert kit.settings.event_retention_days == 0
    await _finished_partition(kit, "run-old")
    before = await kit.events("run-old")
    await _age_events(kit, "run-old", 400 * DAY)
    record = await run_maintenance(kit.db, kit.settings)
    assert record is not None and record.actions["pruned_events"] == 0
    assert _keys(await kit.events("run-old")) == _keys(before)


async def test_batches_bound_the_events_a_pass_prunes(kit: Kit) -> None:
    settings = kit.settings.model_copy(update={"event_retention_days": 1})
    await _finished_partition(kit, "run-old", n=3)
    total = len(await kit.events("run-old"))
    await _age_events(kit, "run-old", 2 * DAY)
    first = await run_maintenance(kit.db, settings, batch=2)
    assert first is not None and first.actions["pruned_events"] == 2 and first.actions["more"]
    rest = await run_maintenance(kit.db, settings, batch=1000)
    assert rest is not None and rest.actions["pruned_events"] == total - 3
    assert len(await kit.events("run-old")) == 1
