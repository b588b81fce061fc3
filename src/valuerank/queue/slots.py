"""Concurrency caps (global, per organisation, per provider, per model) as counted slots.

A cap is a `queue_slots` row (`in_use`, `max`); no row means no cap. The claim takes a slot
of every cap that applies to a job in the claim's transaction, under row locks taken in key
order; the statement that moves the job out of `running` under its lease releases exactly
the slots recorded in `jobs.slot_keys` by that claim. So a cap is never exceeded, and a slot
is never leaked nor released twice (only one transition out of `running` can win).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import Annotated

from pydantic import Field
from pydantic.dataclasses import dataclass
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import queue_slots
from valuerank.queue.dialect import upsert
from valuerank.queue.settings import unlimited_if_zero
from valuerank.shapes import SHAPE


class SlotScope(StrEnum):
    GLOBAL = "global"
    ORG = "org"
    PROVIDER = "provider"
    MODEL = "model"


GLOBAL_KEY = "global"


def org_key(org_id: str) -> str:
    return f"org:{org_id}"


def provider_key(provider: str) -> str:
    return f"provider:{provider}"


def model_key(provider: str | None, model: str) -> str:
    return f"model:{provider or ''}:{model}"


def applicable_keys(org_id: str, provider: str | None, model: str | None) -> list[str]:
    """Every cap key that could apply to a job, sorted (the lock order)."""
    keys = [GLOBAL_KEY, org_key(org_id)]
    if provider is not None:
        keys.append(provider_key(provider))
    if model is not None:
        keys.append(model_key(provider, model))
    return sorted(keys)


@dataclass(frozen=True, config=SHAPE)
class Cap:
    """A concurrency cap: its slots in use and its maximum (an answer of the queue status and
    of /api/queue/caps)."""

    key: str
    scope: Annotated[
        SlotScope,
        Field(
            description="global, org (the queue status shows the caller's only), provider or model."
        ),
    ]
    org_id: str | None
    provider: str | None
    model: str | None
    in_use: int
    max: int
    is_default: Annotated[
        bool,
        Field(
            description="An organisation cap made by the workers' default "
            "(VALUERANK_WORKER_ORG_CONCURRENCY), which follows it; false: set for it."
        ),
    ] = False

    @property
    def room(self) -> int:
        return max(self.max - self.in_use, 0)


async def set_cap(
    conn: AsyncConnection,
    scope: SlotScope,
    max_running: int,
    *,
    org_id: str | None = None,
    provider: str | None = None,
    model: str | None = None,
) -> str:
    """Create or change a cap; slots in use are kept. Returns its key. A cap of 0 is no cap:
    the cap is removed. An organisation cap set here is that organisation's own: the
    workers' default (`apply_org_default`) no longer changes it."""
    if max_running < 0:
        raise ValueError("a cap cannot be negative")
    if scope is SlotScope.GLOBAL:
        key = GLOBAL_KEY
    elif scope is SlotScope.ORG:
        if org_id is None:
            raise ValueError("an organisation cap needs org_id")
        key = org_key(org_id)
    elif scope is SlotScope.PROVIDER:
        if provider is None:
            raise ValueError("a provider cap needs provider")
        key = provider_key(provider)
    else:
        if model is None:
            raise ValueError("a model cap needs model")
        key = model_key(provider, model)
    if unlimited_if_zero(max_running) is None:
        await remove_cap(conn, key)
        return key
    stmt = (
        upsert(conn)(queue_slots)
        .values(
            key=key,
            scope=scope.value,
            org_id=org_id if scope is SlotScope.ORG else None,
            provider=provider if scope in (SlotScope.PROVIDER, SlotScope.MODEL) else None,
            model=model if scope is SlotScope.MODEL else None,
            in_use=0,
            max=max_running,
            is_default=False,
        )
        .on_conflict_do_update(
            index_elements=[queue_slots.c.key], set_={"max": max_running, "is_default": False}
        )
    )
    await conn.execute(stmt)
    return key


async def apply_global_cap(conn: AsyncConnection, max_running: int | None) -> None:
    """Make the global cap `max_running` (settings' `global_concurrency`): 0 lifts it, None
    leaves it as the fleet has it."""
    if max_running is not None:
        await set_cap(conn, SlotScope.GLOBAL, max_running)


async def apply_org_default(conn: AsyncConnection, max_running: int | None) -> int:
    """Make the per-organisation default `max_running` (settings' `org_concurrency`) on the
    caps it made before: 0 lifts them (no cap), another value changes them, None leaves them
    as the fleet has them. Caps set for one organisation are left alone. Returns the caps
    changed or lifted."""
    if max_running is None:
        return 0
    if max_running < 0:
        raise ValueError("a cap cannot be negative")
    defaults = queue_slots.c.is_default.is_(True)
    if unlimited_if_zero(max_running) is None:
        result = await conn.execute(queue_slots.delete().where(defaults))
    else:
        result = await conn.execute(
            update(queue_slots)
            .where(defaults, queue_slots.c.max != max_running)
            .values(max=max_running)
        )
    return int(result.rowcount or 0)


async def remove_cap(conn: AsyncConnection, key: str) -> bool:
    """Lift a cap. Jobs holding its slots release nothing when they finish."""
    result = await conn.execute(queue_slots.delete().where(queue_slots.c.key == key))
    return bool(result.rowcount)


async def list_caps(conn: AsyncConnection) -> list[Cap]:
    rows = await conn.execute(select(queue_slots).order_by(queue_slots.c.key))
    return [
        Cap(
            key=r.key,
            scope=SlotScope(r.scope),
            org_id=r.org_id,
            provider=r.provider,
            model=r.model,
            in_use=r.in_use,
            max=r.max,
            is_default=r.is_default,
        )
        for r in rows
    ]


async def ensure_org_caps(conn: AsyncConnection, org_ids: Iterable[str], max_running: int) -> None:
    """Give organisations without a cap the default one (an explicit cap is left alone)."""
    for org_id in sorted(set(org_ids)):
        await conn.execute(
            upsert(conn)(queue_slots)
            .values(
                key=org_key(org_id),
                scope=SlotScope.ORG.value,
                org_id=org_id,
                in_use=0,
                max=max_running,
                is_default=True,
            )
            .on_conflict_do_nothing(index_elements=[queue_slots.c.key])
        )


async def take_slots(
    conn: AsyncConnection, wanted: Sequence[tuple[str, list[str]]]
) -> tuple[dict[str, list[str]], list[str]]:
    """Take, for each (job id, applicable keys) in order, one slot of every existing cap.

    Returns ({job id: keys taken} for the jobs that got all their slots, [job ids that did
    not]). Locks the cap rows in key order first (PostgreSQL), so concurrent claimers and
    finishers queue up instead of deadlocking, and see each other's counts.
    """
    all_keys = sorted({k for _, keys in wanted for k in keys})
    query = (
        select(queue_slots.c.key, queue_slots.c.in_use, queue_slots.c.max)
        .where(queue_slots.c.key.in_(all_keys))
        .order_by(queue_slots.c.key)
    )
    if conn.dialect.name == "postgresql":
        query = query.with_for_update()
    room = {r.key: r.max - r.in_use for r in await conn.execute(query)}
    granted: dict[str, list[str]] = {}
    refused: list[str] = []
    taken: Counter[str] = Counter()
    for job_id, keys in wanted:
        caps = [k for k in keys if k in room]
        if all(room[k] > 0 for k in caps):
            for k in caps:
                room[k] -= 1
                taken[k] += 1
            granted[job_id] = caps
        else:
            refused.append(job_id)
    for key in sorted(taken):
        result = await conn.execute(
            update(queue_slots)
            .where(queue_slots.c.key == key, queue_slots.c.in_use + taken[key] <= queue_slots.c.max)
            .values(in_use=queue_slots.c.in_use + taken[key])
        )
        if result.rowcount != 1:  # cannot happen under the row lock / SQLite's write lock
            raise RuntimeError(f"concurrency slot {key!r} changed under its lock")
    return granted, refused


async def release_slots(conn: AsyncConnection, keys: Iterable[str]) -> None:
    """Give back slots (a key may repeat), in key order."""
    counts = Counter(keys)
    for key in sorted(counts):
        await conn.execute(
            update(queue_slots)
            .where(queue_slots.c.key == key, queue_slots.c.in_use >= counts[key])
            .values(in_use=queue_slots.c.in_use - counts[key])
        )
