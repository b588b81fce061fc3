"""Maintenance deletes cached model answers older than VALUERANK_RESPONSE_CACHE_DAYS (SQLite
and PostgreSQL): the oldest first, a batch at a time, the recent ones kept; 0 keeps all."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import func, insert, select

from valuerank.config import get_settings
from valuerank.db import Database
from valuerank.db.tables import response_cache
from valuerank.pipeline.calls import prune_response_cache
from valuerank.pipeline.maintenance import RESPONSE_CACHE, Retention, maintain
from valuerank.queue import QueueSettings
from valuerank.queue.dialect import db_now_plus

DAY = 86400.0


@pytest.fixture
def cache_days(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    yield monkeypatch
    get_settings.cache_clear()


async def cached(db: Database, org_id: str, ages_in_days: list[float]) -> None:
    async with db.transaction() as conn:
        for n, age in enumerate(ages_in_days):
            await conn.execute(
                insert(response_cache).values(
                    org_id=org_id,
                    key=f"{n:064d}",
                    model="scripted:utilitarian",
                    completion={"text": f"answer {n}"},
                    created_at=db_now_plus(conn.dialect.name, -age * DAY),
                )
            )


async def remaining(db: Database) -> list[str]:
    async with db.transaction() as conn:
        keys = await conn.execute(select(response_cache.c.key).order_by(response_cache.c.key))
        return [k[-1] for k in keys.scalars()]


async def test_maintenance_deletes_answers_past_the_retention(
    db: Database, org_id: str, cache_days: pytest.MonkeyPatch
) -> None:
    await cached(db, org_id, [200, 1, 95, 91, 10])
    cache_days.setenv("VALUERANK_RESPONSE_CACHE_DAYS", "90")
    get_settings.cache_clear()
    record = await maintain(db, QueueSettings(), Retention.of(get_settings()), trigger="cli")
    assert record is not None
    assert record.actions[RESPONSE_CACHE] == {"pruned": 3, "more": False, "retention_days": 90.0}
    assert await remaining(db) == ["1", "4"]

    cache_days.setenv("VALUERANK_RESPONSE_CACHE_DAYS", "0")  # keep forever
    get_settings.cache_clear()
    await cached(db, org_id, [400])
    record = await maintain(db, QueueSettings(), Retention.of(get_settings()), trigger="cli")
    assert record is not None and record.actions[RESPONSE_CACHE]["pruned"] == 0
    async with db.transaction() as conn:
        assert await conn.scalar(select(func.count()).select_from(response_cache)) == 3


async def test_a_batch_at_a_time_oldest_first(db: Database, org_id: str) -> None:
    await cached(db, org_id, [50, 70, 60, 5])
    async with db.transaction() as conn:
        assert await prune_response_cache(conn, older_than_days=30, batch=2) == 2
    assert await remaining(db) == ["0", "3"]  # the 70- and 60-day-old ones went first
    async with db.transaction() as conn:
        assert await prune_response_cache(conn, older_than_days=30, batch=2) == 1
        assert await prune_response_cache(conn, older_than_days=30, batch=2) == 0
    assert await remaining(db) == ["3"]
