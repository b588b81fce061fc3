"""Queue status: counts per status, per provider and per live partition, oldest wait."""

from __future__ import annotations

from typing import TYPE_CHECKING

from valuerank.orgs import ensure_org
from valuerank.queue import (
    SlotScope,
    complete,
    pause_partition,
    pause_provider,
    queue_status,
    set_cap,
)
from valuerank.queue.ratelimit import block_bucket, bucket_key, configure_bucket
from valuerank.queue.status import RateLimitState
from valuerank.shapes import dump

if TYPE_CHECKING:
    from tests.queue.conftest import Kit


async def test_status_snapshot(kit: Kit) -> None:
    await kit.put(3, prefix="o", provider="openai")
    await kit.put(2, prefix="a", provider="anthropic", partition="run-2")
    await kit.age("run_at", 30, None)  # these have waited 30 s; the next one is not due
    await kit.put(1, prefix="later", provider="openai", delay_seconds=3600)
    (first,) = await kit.take()
    async with kit.db.transaction(immediate=True) as conn:
        other = await ensure_org(conn, "other")
    await kit.put(1, prefix="theirs", org_id=other, partition="run-x")
    async with kit.db.transaction(immediate=True) as conn:
        await set_cap(conn, SlotScope.PROVIDER, 8, provider="openai")
        await pause_provider(conn, "anthropic")
        await pause_partition(conn, kit.org_id, "run-2")
        status = await queue_status(conn, org_id=kit.org_id)
        everyone = await queue_status(conn)
    assert status.counts == {
        "queued": 5,
        "running": 1,
        "succeeded": 0,
        "failed": 0,
        "cancelled": 0,
    }
    assert everyone.counts["queued"] == 6
    openai = status.providers["openai"]
    assert (openai.queue_length, openai.in_flight, openai.paused) == (3, 1, False)
    assert status.providers["anthropic"].paused
    assert set(status.partitions) == {"run-1", "run-2"}
    assert status.partitions["run-2"].paused and status.partitions["run-2"].counts["queued"] == 2
    assert status.oldest_waiting_seconds is not None
    assert 25 < status.oldest_waiting_seconds < 120
    assert not status.paused
    assert [c.key for c in status.caps] == ["provider:openai"]
    assert dump(status)["caps"][0]["scope"] == "provider"

    async with kit.db.transaction(immediate=True) as conn:
        await complete(conn, first.lease)
        assert (await queue_status(conn, org_id=kit.org_id)).counts["succeeded"] == 1


async def test_each_providers_rate_limit_state(kit: Kit) -> None:
    """Per provider: no bucket → none; buckets with room → open; out of requests → exhausted;
    a 429's reset → blocked until then (the latest reset of its buckets)."""
    await kit.put(2, prefix="o", provider="openai")
    await kit.put(1, prefix="a", provider="anthropic", partition="run-2")
    await kit.put(1, prefix="g", provider="google", partition="run-3")
    async with kit.db.transaction(immediate=True) as conn:
        await configure_bucket(conn, "openai", rpm=600)
        await configure_bucket(conn, "openai", model="gpt-x", rpm=60)
        await configure_bucket(conn, "anthropic", rpm=1)
    assert len(await kit.take(4)) == 4  # anthropic has used its one request a minute
    async with kit.db.transaction(immediate=True) as conn:
        await block_bucket(conn, bucket_key("openai", "gpt-x"), 120)
        await block_bucket(conn, bucket_key("openai"), 30)
        status = await queue_status(conn, org_id=kit.org_id)
    openai, anthropic, google = (status.providers[p] for p in ("openai", "anthropic", "google"))
    assert google.rate_limit is RateLimitState.NONE and google.buckets == []
    assert anthropic.rate_limit is RateLimitState.EXHAUSTED and anthropic.blocked_until is None
    (held,) = anthropic.buckets
    assert held.rpm_limit == 1
    assert held.available_requests is not None and held.available_requests < 1
    assert openai.rate_limit is RateLimitState.BLOCKED
    assert [b.model for b in openai.buckets] == ["", "gpt-x"]
    assert openai.blocked_until == openai.buckets[1].blocked_until  # the later reset
    assert openai.blocked_until is not None and openai.buckets[0].blocked_until is not None
    assert 80 < (openai.blocked_until - openai.buckets[0].blocked_until).total_seconds() < 100
    shown = dump(status)["providers"]["openai"]
    assert shown["rate_limit"] == "blocked" and isinstance(shown["blocked_until"], str)
    async with kit.db.transaction(immediate=True) as conn:
        await configure_bucket(conn, "google", rpm=60)
        assert (await queue_status(conn)).providers["google"].rate_limit is RateLimitState.OPEN
