"""Fixtures of the queue tests; every test runs on SQLite and PostgreSQL (see tests/conftest.py).

The helpers hang off one `kit` fixture bound to the test's database and organisation: a
package here would be called `queue` and shadow the standard library's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import func, select, update

from valuerank.db import Database
from valuerank.db.tables import jobs, queue_slots
from valuerank.queue import Event, JobSpec, QueueSettings, claim, enqueue_many, events_after
from valuerank.queue.dialect import db_now_plus
from valuerank.queue.job import Job, get_job

FAST = QueueSettings(
    lease_seconds=30,
    heartbeat_seconds=0.05,
    poll_seconds=0.02,
    retry_base_seconds=0.0,
    retry_cap_seconds=0.0,
    reap_interval_seconds=0.05,
    shutdown_grace_seconds=0.1,
)


@dataclass
class Kit:
    db: Database
    org_id: str
    settings: QueueSettings = FAST

    async def put(
        self, n: int = 1, *, prefix: str = "item", org_id: str | None = None, **fields: Any
    ) -> list[str]:
        """Enqueue n jobs of kind `echo` (fields go to every JobSpec); returns their ids."""
        fields.setdefault("kind", "echo")
        fields.setdefault("partition", "run-1")
        specs = [
            JobSpec(
                org_id=org_id or self.org_id,
                item_key=f"{prefix}-{i}",
                payload={"i": i},
                **fields,
            )
            for i in range(n)
        ]
        async with self.db.transaction(immediate=True) as conn:
            return [e.job_id for e in await enqueue_many(conn, specs)]

    async def take(
        self,
        n: int = 1,
        *,
        worker: str = "w1",
        settings: QueueSettings = FAST,
        kinds: list[str] | None = None,
    ) -> list[Job]:
        return await claim(self.db, worker_id=worker, limit=n, settings=settings, kinds=kinds)

    async def events(self, partition: str = "run-1") -> list[Event]:
        async with self.db.transaction() as conn:
            return await events_after(conn, partition, 0, 10_000)

    async def load(self, job_id: str) -> Job:
        async with self.db.transaction() as conn:
            return await get_job(conn, job_id)

    async def status_counts(self) -> dict[str, int]:
        async with self.db.transaction() as conn:
            rows = await conn.execute(select(jobs.c.status, func.count()).group_by(jobs.c.status))
            return {status: n for status, n in rows}

    async def slots_in_use(self) -> dict[str, int]:
        async with self.db.transaction() as conn:
            rows = await conn.execute(select(queue_slots.c.key, queue_slots.c.in_use))
            return {key: n for key, n in rows}

    async def age(self, column: str, seconds: float, job_ids: list[str] | None = None) -> None:
        """Set a job timestamp to `seconds` ago by the database clock (expire a lease, etc.)."""
        async with self.db.transaction(immediate=True) as conn:
            stmt = update(jobs).values({column: db_now_plus(conn.dialect.name, -seconds)})
            if job_ids is not None:
                stmt = stmt.where(jobs.c.id.in_(job_ids))
            await conn.execute(stmt)


@pytest.fixture
def kit(db: Database, org_id: str) -> Kit:
    return Kit(db, org_id)
