"""The database clock per dialect, and time-ordered ids."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import select

from valuerank.db import Database
from valuerank.queue.dialect import as_utc, db_now, db_now_plus, seconds_since, to_db
from valuerank.queue.ids import new_id


def _utc(value: datetime | None) -> datetime:
    assert value is not None
    return as_utc(value)


async def test_the_database_clock_has_sub_second_resolution(db: Database) -> None:
    dialect = db.dialect
    async with db.transaction() as conn:
        now = _utc(await conn.scalar(select(db_now(dialect))))
        later = _utc(await conn.scalar(select(db_now_plus(dialect, 90.5))))
        earlier = _utc(await conn.scalar(select(db_now_plus(dialect, -10))))
        age = await conn.scalar(select(seconds_since(dialect, db_now_plus(dialect, -42))))
    assert abs(now - datetime.now(UTC)) < timedelta(seconds=5)
    # SQLite reads its clock per statement: the margins allow a busy machine between them.
    assert abs((later - now).total_seconds() - 90.5) < 5
    assert abs((now - earlier).total_seconds() - 10) < 5
    assert age is not None and 41.5 < age < 47
    # Milliseconds, not SQLite's whole-second CURRENT_TIMESTAMP.
    async with db.transaction() as conn:
        samples = {await conn.scalar(select(db_now_plus(dialect, n / 1000))) for n in range(5)}
    assert len(samples) == 5


def test_datetimes_are_bound_in_utc() -> None:
    paris = datetime(2030, 6, 1, 14, 0, tzinfo=timezone(timedelta(hours=2)))
    assert to_db("sqlite", paris) == datetime(2030, 6, 1, 12, 0)
    assert to_db("postgresql", paris) == datetime(2030, 6, 1, 12, 0, tzinfo=UTC)
    with pytest.raises(ValueError):
        to_db("sqlite", datetime(2030, 6, 1))
    assert as_utc(datetime(2030, 1, 1)).tzinfo is UTC


def test_ids_are_time_ordered_and_unique() -> None:
    ids = [new_id() for _ in range(10_000)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert all(i[14] == "7" for i in ids[:10])  # version 7 layout
