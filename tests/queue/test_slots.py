"""Concurrency caps: never exceeded (even by racing claimers), never leaked."""

from __future__ import annotations

import asyncio
import random
from typing import TYPE_CHECKING

from sqlalchemy import func, select

from valuerank.db.tables import jobs
from valuerank.orgs import ensure_org
from valuerank.queue import (
    JobStatus,
    Permanent,
    QueueSettings,
    SlotScope,
    Transient,
    complete,
    list_caps,
    pause_provider,
    reap,
    remove_cap,
    set_cap,
    settle_error,
)
from valuerank.queue.slots import GLOBAL_KEY, model_key, org_key, provider_key

if TYPE_CHECKING:
    from tests.queue.conftest import Kit


async def _running_by(kit: Kit) -> dict[str, int]:
    async with kit.db.transaction() as conn:
        rows = (
            await conn.execute(
                select(jobs.c.provider, jobs.c.model, func.count())
                .where(jobs.c.status == "running")
                .group_by(jobs.c.provider, jobs.c.model)
            )
        ).all()
    out = {"total": sum(n for *_, n in rows)}
    out["openai"] = sum(n for p, _, n in rows if p == "openai")
    out["claude"] = sum(n for p, m, n in rows if (p, m) == ("anthropic", "claude"))
    return out


async def test_caps_hold_under_racing_claimers_and_never_leak(kit: Kit) -> None:
    async with kit.db.transaction(immediate=True) as conn:
        await set_cap(conn, SlotScope.GLOBAL, 5)
        await set_cap(conn, SlotScope.PROVIDER, 2, provider="openai")
        await set_cap(conn, SlotScope.MODEL, 1, provider="anthropic", model="claude")
    await kit.put(16, prefix="o", provider="openai", model="gpt", partition="run-o")
    await kit.put(12, prefix="c", provider="anthropic", model="claude", partition="run-c")
    await kit.put(12, prefix="h", provider="anthropic", model="haiku", partition="run-h")
    await kit.put(8, prefix="n", partition="run-n")
    peaks = {"total": 0, "openai": 0, "claude": 0}
    done = asyncio.Event()

    async def monitor() -> None:
        while not done.is_set():
            for key, n in (await _running_by(kit)).items():
                peaks[key] = max(peaks[key], n)
            await asyncio.sleep(0.002)

    async def worker(n: int) -> None:
        rng = random.Random(n)
        idle = 0
        while idle < 5:
            batch = await kit.take(2, worker=f"w{n}")
            idle = 0 if batch else idle + 1
            await asyncio.sleep(0.001)
            for job in batch:
                async with kit.db.transaction(immediate=True) as conn:
                    roll = rng.random()
                    if roll < 0.6:
                        await complete(conn, job.lease, {"ok": 1})
                    elif roll < 0.8:
                        await settle_error(conn, job, Transient("x"), settings=kit.settings)
                    else:
                        await settle_error(conn, job, Permanent("x"), settings=kit.settings)

    watcher = asyncio.create_task(monitor())
    await asyncio.gather(*(worker(n) for n in range(6)))
    done.set()
    await watcher
    assert peaks["total"] <= 5 and peaks["openai"] <= 2 and peaks["claude"] <= 1
    assert peaks["total"] >= 2  # the workers really overlapped
    counts = await kit.status_counts()
    assert set(counts) <= {"succeeded", "failed"} and sum(counts.values()) == 48
    assert set((await kit.slots_in_use()).values()) == {0}


async def test_slots_come_back_when_the_reaper_takes_a_job(kit: Kit) -> None:
    async with kit.db.transaction(immediate=True) as conn:
        await set_cap(conn, SlotScope.GLOBAL, 2)
        await set_cap(conn, SlotScope.PROVIDER, 1, provider="p")
    await kit.put(3, provider="p")
    (job,) = await kit.take(3)
    assert job.slot_keys == sorted([GLOBAL_KEY, provider_key("p")])
    assert await kit.slots_in_use() == {GLOBAL_KEY: 1, provider_key("p"): 1}
    await kit.age("lease_expires_at", 1)
    async with kit.db.transaction(immediate=True) as conn:
        assert (await reap(conn, kit.settings)).requeued == [job.id]
    assert await kit.slots_in_use() == {GLOBAL_KEY: 0, provider_key("p"): 0}
    assert len(await kit.take(3)) == 1


async def test_one_providers_cap_does_not_hold_back_another(kit: Kit) -> None:
    async with kit.db.transaction(immediate=True) as conn:
        await set_cap(conn, SlotScope.PROVIDER, 1, provider="busy")
    await kit.put(5, prefix="busy", provider="busy", priority="high")
    (other,) = await kit.put(prefix="free", provider="free")
    claimed = await kit.take(10)
    assert sorted(j.provider or "" for j in claimed) == ["busy", "free"]
    # Paused, the busy provider's jobs wait; the other provider is unaffected.
    (late,) = await kit.put(prefix="late", provider="free")
    async with kit.db.transaction(immediate=True) as conn:
        await pause_provider(conn, "busy")
        await remove_cap(conn, provider_key("busy"))
    assert [j.id for j in await kit.take(10)] == [late]
    assert other in {j.id for j in claimed}


async def test_default_org_cap_from_settings(kit: Kit) -> None:
    settings = QueueSettings(lease_seconds=30, heartbeat_seconds=1, org_concurrency=2)
    async with kit.db.transaction() as conn:
        org_b = await ensure_org(conn, "org-b")
    await kit.put(5, prefix="a")
    await kit.put(5, prefix="b", org_id=org_b, partition="run-b")
    claimed = await kit.take(10, settings=settings)
    assert sorted(j.org_id for j in claimed) == sorted([kit.org_id] * 2 + [org_b] * 2)
    # Jobs claimed beyond a new cap were put back as if never claimed.
    async with kit.db.transaction() as conn:
        back = (
            await conn.execute(
                select(jobs.c.attempts, jobs.c.lease_token, jobs.c.started_at).where(
                    jobs.c.status == JobStatus.QUEUED.value
                )
            )
        ).all()
        caps = {c.key: (c.in_use, c.max) for c in await list_caps(conn)}
    assert len(back) == 6 and set(back) == {(0, None, None)}
    assert caps == {org_key(kit.org_id): (2, 2), org_key(org_b): (2, 2)}
    assert await kit.take(10, settings=settings) == []
    # An explicit cap wins over the default.
    async with kit.db.transaction(immediate=True) as conn:
        await set_cap(conn, SlotScope.ORG, 3, org_id=org_b)
    (more,) = await kit.take(10, settings=settings)
    assert more.org_id == org_b


async def test_model_caps_apply_to_that_model_only(kit: Kit) -> None:
    async with kit.db.transaction(immediate=True) as conn:
        key = await set_cap(conn, SlotScope.MODEL, 1, provider="ollama", model="llama3:8b")
    assert key == model_key("ollama", "llama3:8b")
    llamas = await kit.put(2, prefix="l", provider="ollama", model="llama3:8b")
    (other,) = await kit.put(prefix="q", provider="ollama", model="qwen")
    taken = {j.id for j in await kit.take(5)}
    assert other in taken and len(taken & set(llamas)) == 1


async def test_a_cap_of_zero_is_no_cap(kit: Kit) -> None:
    async with kit.db.transaction(immediate=True) as conn:
        await set_cap(conn, SlotScope.PROVIDER, 1, provider="ollama")
        await set_cap(conn, SlotScope.PROVIDER, 0, provider="ollama")
    assert await kit.slots_in_use() == {}
    await kit.put(3, provider="ollama")
    assert len(await kit.take(5)) == 3
