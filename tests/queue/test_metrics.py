"""Prometheus metrics read from the database."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client.parser import text_string_to_metric_families

from valuerank.queue import RateLimited, reap, settle_error
from valuerank.queue.maintenance import run_maintenance
from valuerank.queue.metrics import render_metrics
from valuerank.queue.outbox import enqueue_notifications, register_webhook

if TYPE_CHECKING:
    from tests.queue.conftest import Kit


def _samples(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text.decode())
        for s in family.samples
    }


async def test_metrics_report_the_queue(kit: Kit) -> None:
    empty = _samples(await render_metrics(kit.db))
    assert empty[("valuerank_queue_jobs", (("status", "queued"),))] == 0
    assert empty[("valuerank_queue_oldest_waiting_seconds", ())] == 0
    assert not any(name.startswith("valuerank_maintenance") for name, _ in empty)

    await kit.put(3, provider="openai")
    await kit.put(1, prefix="other", provider="anthropic")
    await kit.put(1, prefix="bare")
    await kit.age("run_at", 120)
    a, b = await kit.take(2, kinds=None)  # two openai jobs (the oldest) now running
    async with kit.db.transaction(immediate=True) as conn:
        await settle_error(conn, a, RateLimited("429", retry_after=30), settings=kit.settings)
        hook = await register_webhook(conn, kit.org_id, "http://example.invalid/x")
        await enqueue_notifications(conn, kit.org_id, "t", {})
    await kit.age("lease_expires_at", 1, [b.id])
    async with kit.db.transaction(immediate=True) as conn:
        await reap(conn, kit.settings)
    (taken,) = await kit.take(1)
    assert taken.provider == "anthropic"  # openai waits for the reset of its 429
    assert await run_maintenance(kit.db, kit.settings) is not None

    s = _samples(await render_metrics(kit.db))
    assert s[("valuerank_queue_jobs", (("status", "queued"),))] == 4
    assert s[("valuerank_queue_jobs", (("status", "running"),))] == 1
    assert s[("valuerank_queue_jobs", (("status", "succeeded"),))] == 0
    assert s[("valuerank_queue_in_flight", ())] == 1
    provider = "valuerank_queue_provider_jobs"
    assert s[(provider, (("provider", "openai"), ("status", "queued")))] == 3
    assert s[(provider, (("provider", "anthropic"), ("status", "running")))] == 1
    assert s[(provider, (("provider", ""), ("status", "queued")))] == 1
    assert 100 < s[("valuerank_queue_oldest_waiting_seconds", ())] < 300
    errors = "valuerank_queue_job_errors"
    assert s[(errors, (("category", "rate_limited"),))] == 1
    assert s[(errors, (("category", "lease_expired"),))] == 1
    assert s[(errors, (("category", "permanent"),))] == 0
    assert s[(errors + "_recent", (("category", "rate_limited"),))] == 1
    # The partition's events notified the catch-all webhook too.
    assert s[("valuerank_outbox_notifications", (("status", "pending"),))] >= 1
    assert s[("valuerank_outbox_notifications", (("status", "dead"),))] == 0
    assert 0 <= s[("valuerank_maintenance_last_run_age_seconds", ())] < 60
    assert s[("valuerank_maintenance_last_run_succeeded", ())] == 1
    assert hook.id
