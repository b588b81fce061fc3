"""Real worker processes across a PostgreSQL crash restart: the run still completes, each
job exactly once.

This crash-restarts the suite's PostgreSQL (VALUERANK_TEST_DATABASE_URL), so it runs only in
CI or when VALUERANK_FAULTS_RESTART_PG=1 (scripts/test.sh sets it for a server of the suite's
own). The server is restarted the way it was started: with pg_ctl when scripts/test.sh
started it (VALUERANK_TEST_PG_DATA, _BIN, _RUN_AS), with pg_ctlcluster when it is a Debian
cluster on the URL's port; it is always brought back up (finally).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
from urllib.parse import urlsplit

import psycopg
import pytest
from tests.conftest import PG_URL, _libpq_url, is_ci, missing_prerequisite
from tests.waiting import WAIT_SECONDS, wait_until

from .conftest import Faults

RESTART_ENV = "VALUERANK_FAULTS_RESTART_PG"

pytestmark = [
    pytest.mark.serial,
    pytest.mark.skipif(
        not (is_ci() or os.environ.get(RESTART_ENV) == "1"),
        reason=f"restarts the suite's PostgreSQL server: set CI or {RESTART_ENV}=1 to run",
    ),
]


def _control() -> list[str]:
    """The command (less its action) that controls the server at PG_URL, as it was started."""
    data = os.environ.get("VALUERANK_TEST_PG_DATA")
    if data:  # scripts/test.sh started it: pg_ctl, as the user it runs as (never root)
        pg_ctl = os.path.join(os.environ.get("VALUERANK_TEST_PG_BIN", ""), "pg_ctl")
        user = os.environ.get("VALUERANK_TEST_PG_RUN_AS", "")
        # -l: the restarted server's output goes to a file, not to our pipes (which it would
        # hold open, so reading them would never end).
        log = os.path.join(data, "restart.log")
        return [*(["runuser", "-u", user, "--"] if user else []), pg_ctl, "-D", data, "-l", log]
    port = urlsplit(PG_URL).port or 5432
    if shutil.which("pg_lsclusters"):
        listing = subprocess.run(
            ["pg_lsclusters", "--no-header"], check=False, capture_output=True, text=True
        ).stdout
        for line in listing.splitlines():
            version, name, cluster_port, *_ = (*line.split(), "", "", "")
            if cluster_port == str(port):
                return ["pg_ctlcluster", "--skip-systemctl-redirect", version, name]
    missing_prerequisite(
        f"cannot restart the PostgreSQL at {PG_URL}: no VALUERANK_TEST_PG_DATA (scripts/test.sh "
        f"sets it for a server it starts) and no Debian cluster on port {port}"
    )


def _pg_ready() -> bool:
    try:
        psycopg.connect(_libpq_url(PG_URL), connect_timeout=2).close()
    except psycopg.Error:
        return False
    return True


def _ctl(control: list[str], action: str, timeout: float) -> subprocess.CompletedProcess[str]:
    # Immediate mode is a crash restart: no waiting on clients' half-open sockets.
    return subprocess.run(
        [*control, action, "-m", "immediate"],
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _ensure_running(control: list[str]) -> None:
    if not _pg_ready():  # a failed restart left it down (a start under way just fails)
        subprocess.run([*control, "start"], check=False, capture_output=True, timeout=60)
        wait_until(_pg_ready, what=f"PostgreSQL at {PG_URL} to come back after the restart")


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_workers_survive_a_postgres_restart(faults: Faults) -> None:
    control = _control()
    ids = await faults.put(16, payload={"seconds": 0.5}, partition="pg-restart")
    workers = [faults.worker(f"r{i}", "--concurrency", "3") for i in range(2)]

    async def some_done() -> bool:
        return sum(1 for j in await faults.jobs() if j.status.value == "succeeded") >= 3

    # Both workers are up before the restart (one slow to start on a loaded machine would
    # meet the restart at its first connection, which is not what this test is about).
    for w in workers:
        await asyncio.to_thread(w.wait_ready)
    await faults.wait_for(some_done, "a few jobs to finish before the restart")
    unfinished = [j for j in await faults.jobs() if j.status.value != "succeeded"]
    assert unfinished, "the restart should come mid-run"
    try:
        result = _ctl(control, "restart", timeout=WAIT_SECONDS)
        assert result.returncode == 0, f"restart failed: {result.stdout}{result.stderr}"
    finally:
        _ensure_running(control)
    await faults.db.engine.dispose()  # the test's own pooled connections died with the server

    await faults.wait_for(lambda: faults.all_succeeded(len(ids)), "the run to complete")
    assert await faults.completions() == dict.fromkeys(ids, 1)
    assert all(w.proc.poll() is None for w in workers), "a worker died on the restart"
    for w in workers:
        w.signal(signal.SIGTERM)
    results = [w.finish() for w in workers]
    assert [code for code, _ in results] == [0, 0]
    assert sum(summary["succeeded"] for _, summary in results) <= len(ids)
