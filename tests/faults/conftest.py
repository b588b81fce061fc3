"""Fault tests with real worker processes (`python -m valuerank worker`) on a real database.

Workers run with short leases, polls and reap intervals so a whole fault (kill, stall,
restart) plays out in a few seconds. The test process watches the database directly.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

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
class WorkerProc:
    proc: subprocess.Popen[str]
    worker_id: str
    # stderr goes to a file: a pipe nobody reads until exit fills up and freezes the worker.
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text("utf-8", errors="replace")

    def signal(self, sig: signal.Signals) -> None:
        if sig in (signal.SIGTERM, signal.SIGINT):
            # Before its handlers are installed (a slow start on a busy machine) SIGTERM
            # would kill the worker instead of draining it.
            self.wait_ready()
        self.proc.send_signal(sig)

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while f"worker {self.worker_id} ready" not in self.log():
            if self.proc.poll() is not None:
                return  # it ended on its own; the caller's exit-code check tells how
            assert time.monotonic() < deadline, f"worker {self.worker_id} never became ready"
            time.sleep(0.02)

    def finish(self, timeout: float = 20) -> tuple[int, dict[str, Any]]:
        """Wait for exit; (exit code, the --json summary or {})."""
        out, _ = self.proc.communicate(timeout=timeout)
        try:
            summary = json.loads(out) if out.strip() else {}
        except json.JSONDecodeError:
            summary = {}
        if self.proc.returncode != 0:
            print(f"worker {self.worker_id} stderr:\n{self.log()}", file=sys.stderr)
        return self.proc.returncode, summary


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
        fd, log_name = tempfile.mkstemp(prefix=f"valuerank-worker-{worker_id}-", suffix=".log")
        with os.fdopen(fd, "w") as log_file:
            proc = subprocess.Popen(
                [sys.executable, "-m", "valuerank", "worker", "--json", "--id", worker_id, *args],
                env=full_env,
                stdout=subprocess.PIPE,
                stderr=log_file,
                text=True,
            )
        wp = WorkerProc(proc, worker_id, Path(log_name))
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
        self, check: Callable[[], Awaitable[bool]], timeout: float, what: str
    ) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if await check():
                    return
            except Exception:  # the database may be restarting: keep polling
                pass
            await asyncio.sleep(0.05)
        states = Counter(j.status.value for j in await self.jobs())
        pytest.fail(f"timed out after {timeout} s waiting for {what}; jobs: {dict(states)}")

    async def all_succeeded(self, n: int) -> bool:
        jobs = await self.jobs()
        return len(jobs) == n and all(j.status.value == "succeeded" for j in jobs)

    def cleanup(self) -> None:
        for wp in self.procs:
            if wp.proc.poll() is None:
                wp.proc.send_signal(signal.SIGCONT)
                wp.proc.kill()
                wp.proc.communicate(timeout=10)
                print(f"--- worker {wp.worker_id} (killed at teardown) stderr:\n{wp.log()[-3000:]}")
            else:
                code = wp.proc.returncode
                print(f"--- worker {wp.worker_id} (exited {code}) stderr:\n{wp.log()[-3000:]}")
            wp.log_path.unlink(missing_ok=True)


@pytest.fixture
def faults(db: Database, org_id: str, database_url: Any) -> Iterator[Faults]:
    kit = Faults(db, org_id, database_url.url, database_url.backend)
    try:
        yield kit
    finally:
        kit.cleanup()
