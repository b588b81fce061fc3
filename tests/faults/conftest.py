"""Fault tests with real worker processes (`python -m valuerank worker`) on a real database.

Workers run with short leases, polls and reap intervals so a whole fault (kill, stall,
restart) plays out in a few seconds. The test process watches the database directly.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from sqlalchemy import select
from tests.servers import WorkerProc, start_worker_process
from tests.waiting import WAIT_SECONDS, wait_until_async

from valuerank.db import Database
from valuerank.db.tables import events
from valuerank.queue import JobSpec, enqueue_many
from valuerank.queue.job import Job, list_jobs

FAST_ENV = {
    "VALUERANK_WORKER_LEASE_SECONDS": "2",
    "VALUERANK_WORKER_HEARTBEAT_SECONDS": "0.3",
    "VALUERANK_WORKER_POLL_SECONDS": "0.05",
    "VALUERANK_WORKER_REAP_INTERVAL_SECONDS": "0.3",
    "VALUERANK_WORKER_RETRY_BASE_SECONDS": "0",
    "VALUERANK_WORKER_RETRY_CAP_SECONDS": "0",
    "VALUERANK_WORKER_SHUTDOWN_GRACE_SECONDS": "5",
}


@dataclass
class Faults:
    db: Database
    org_id: str
    url: str
    backend: str
    procs: list[WorkerProc] = field(default_factory=list)

    def worker(
        self,
        worker_id: str,
        *args: str,
        process_env: dict[str, str] | None = None,
        **env: str,
    ) -> WorkerProc:
        """A worker process; `env` are worker settings (VALUERANK_WORKER_<NAME>),
        `process_env` other variables of its environment (e.g. a failpoint)."""
        full_env = {**os.environ, **FAST_ENV, "VALUERANK_DATABASE_URL": self.url}
        full_env.update({f"VALUERANK_WORKER_{k.upper()}": v for k, v in env.items()})
        full_env.update(process_env or {})
        wp = start_worker_process(full_env, *args, worker_id=worker_id)
        self.procs.append(wp)
        return wp

    async def put(
        self, n: int, kind: str = "sleep", *, prefix: str | None = None, **fields: Any
    ) -> list[str]:
        specs = [
            JobSpec(kind=kind, org_id=self.org_id, item_key=f"{prefix or kind}-{i}", **fields)
            for i in range(n)
        ]
        async with self.db.transaction() as conn:
            return [e.job_id for e in await enqueue_many(conn, specs)]

    async def jobs(self) -> list[Job]:
        async with self.db.transaction() as conn:
            return await list_jobs(conn, org_id=self.org_id)

    async def completions(self) -> Counter[str]:
        """task_complete events per job id."""
        async with self.db.transaction() as conn:
            rows = await conn.execute(select(events.c.data).where(events.c.type == "task_complete"))
            return Counter(r.data["job_id"] for r in rows)

    async def wait_for(
        self, check: Callable[[], Awaitable[bool]], what: str, timeout: float = WAIT_SECONDS
    ) -> None:
        """Until `check()` holds; a check that raises (the database restarting) counts as
        not yet. A timeout's failure says the jobs' states."""
        try:
            await wait_until_async(check, what=what, timeout=timeout, tolerate=(Exception,))
        except pytest.fail.Exception as timed_out:
            states = Counter(j.status.value for j in await self.jobs())
            pytest.fail(f"{timed_out}; jobs: {dict(states)}")

    async def all_succeeded(self, n: int) -> bool:
        jobs = await self.jobs()
        return len(jobs) == n and all(j.status.value == "succeeded" for j in jobs)

    def cleanup(self) -> None:
        for wp in self.procs:
            running = wp.proc.poll() is None
            wp.stop()
            how = "killed at teardown" if running else f"exited {wp.proc.returncode}"
            print(f"--- worker {wp.worker_id} ({how}) stderr:\n{wp.log()[-3000:]}")
            wp.log_path.unlink(missing_ok=True)


@pytest.fixture
def faults(db: Database, org_id: str, database_url: Any) -> Iterator[Faults]:
    kit = Faults(db, org_id, database_url.url, database_url.backend)
    try:
        yield kit
    finally:
        kit.cleanup()
