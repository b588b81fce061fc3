"""Real worker processes across a PostgreSQL crash restart: the run still completes, each
job exactly once.

This restarts the SHARED local PostgreSQL server, so it runs only in CI or when
VALUERANK_FAULTS_RESTART_PG=1; the server is always brought back up (finally).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from tests.conftest import missing_prerequisite

from .conftest import Faults

RESTART_ENV = "VALUERANK_FAULTS_RESTART_PG"

pytestmark = [
    pytest.mark.serial,
    pytest.mark.skipif(
        not (os.environ.get("CI") or os.environ.get(RESTART_ENV) == "1"),
        reason=f"restarts the shared PostgreSQL server: set CI or {RESTART_ENV}=1 to run",
    ),
]


def _cluster_version() -> str:
    versions = sorted(p.name for p in Path("/etc/postgresql").iterdir() if p.is_dir())
    if not versions:
        missing_prerequisite("no local PostgreSQL cluster under /etc/postgresql to restart")
    return versions[-1]


def _pg_ready() -> bool:
    return subprocess.run(["pg_isready", "-q"], check=False).returncode == 0


def _wait_ready(timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _pg_ready():
            return True
        time.sleep(0.1)
    return _pg_ready()


def _ctl(version: str, action: str, timeout: float) -> subprocess.CompletedProcess[str]:
    # Immediate mode is a crash restart: no waiting on clients' half-open sockets.
    return subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", action, "-m", "immediate"],
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _ensure_running(version: str) -> None:
    if _wait_ready(2):
        return
    subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "start"],
        check=False,
        capture_output=True,
        timeout=60,
    )
    assert _wait_ready(60), "PostgreSQL did not come back after the restart"


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_workers_survive_a_postgres_restart(faults: Faults) -> None:
    version = _cluster_version()
    ids = await faults.put(16, payload={"seconds": 0.5}, partition="pg-restart")
    workers = [faults.worker(f"r{i}", "--concurrency", "3") for i in range(2)]

    async def some_done() -> bool:
        return sum(1 for j in await faults.jobs() if j.status.value == "succeeded") >= 3

    await faults.wait_for(some_done, 20, "a few jobs to finish before the restart")
    unfinished = [j for j in await faults.jobs() if j.status.value != "succeeded"]
    assert unfinished, "the restart should come mid-run"
    try:
        result = _ctl(version, "restart", timeout=30)
        assert result.returncode == 0, f"restart failed: {result.stdout}{result.stderr}"
    finally:
        _ensure_running(version)
    await faults.db.engine.dispose()  # the test's own pooled connections died with the server

    await faults.wait_for(lambda: faults.all_succeeded(len(ids)), 25, "the run to complete")
    assert await faults.completions() == dict.fromkeys(ids, 1)
    assert all(w.proc.poll() is None for w in workers), "a worker died on the restart"
    for w in workers:
        w.signal(signal.SIGTERM)
    results = [w.finish() for w in workers]
    assert [code for code, _ in results] == [0, 0]
    assert sum(summary["succeeded"] for _, summary in results) <= len(ids)
