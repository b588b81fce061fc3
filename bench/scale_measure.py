"""What bench.scale measures while a run goes: the workers' RSS and CPU, the run's finished
jobs and the database backends' CPU (a sampling thread, /proc), and the status of the run as
the CLI and the API give it (wall time and CPU time); and the plot of a run.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg

from bench.pg import libpq

API_REPEAT = 5  # requests per route and probe


def vr_cmd(*args: str) -> list[str]:
    """`valuerank ARGS…` as users run it (this interpreter, so the same installation)."""
    return [sys.executable, "-m", "valuerank", *args]


def rss_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None


def cpu_seconds(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_rusage(proc: subprocess.Popen[Any]) -> tuple[int, float]:
    """Wait for a child: its exit code and its own peak RSS in MB (wait4, Linux KB)."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss / 1024


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def stats(values: Sequence[float]) -> dict[str, Any]:
    if not values:
        return {"n": 0}
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "n": len(values),
        "p50": round(statistics.median(ordered), 1),
        "p95": round(p95, 1),
        "max": round(ordered[-1], 1),
    }


@dataclass
class Sample:
    t: float
    done: int
    rss: dict[str, float]
    probing: bool  # the run was still running its probes


@dataclass
class Sampler:
    """Samples the workers' RSS and CPU, the run's finished jobs and the database backends'
    CPU every `every` seconds in a thread, until stopped."""

    url: str
    database: str
    workers: dict[str, int]
    every: float
    run_id: str | None = None
    status: str | None = None
    samples: list[Sample] = field(default_factory=list)
    worker_cpu: dict[str, float] = field(default_factory=dict)
    backend_cpu: dict[int, float] = field(default_factory=dict)
    stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self._loop, daemon=True)
        thread.start()
        return thread

    def _loop(self) -> None:
        t0 = time.monotonic()
        with psycopg.connect(libpq(self.url), autocommit=True) as conn:
            while not self.stop.is_set():
                done = 0
                if self.run_id is not None:
                    row = conn.execute(
                        "SELECT c.jobs_succeeded + c.jobs_failed + c.jobs_cancelled, r.status "
                        "FROM runs r LEFT JOIN queue_controls c ON c.scope = 'partition' "
                        "AND c.key = r.id WHERE r.id = %s",
                        (self.run_id,),
                    ).fetchone()
                    if row is not None:
                        done, self.status = int(row[0] or 0), str(row[1])
                rss = {name: rss_mb(pid) for name, pid in self.workers.items()}
                self.samples.append(
                    Sample(
                        time.monotonic() - t0,
                        done,
                        {k: v for k, v in rss.items() if v},
                        self.status in (None, "pending", "running"),
                    )
                )
                for name, pid in self.workers.items():
                    cpu = cpu_seconds(pid)
                    if cpu is not None:
                        self.worker_cpu[name] = cpu
                pids = conn.execute(
                    "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> "
                    "pg_backend_pid()",
                    (self.database,),
                ).fetchall()
                for (pid,) in pids:
                    cpu = cpu_seconds(int(pid))
                    if cpu is not None:
                        self.backend_cpu[int(pid)] = cpu
                self.stop.wait(self.every)


# -- the status probes --------------------------------------------------------------------


@dataclass
class Probes:
    """Times `runs status` (CLI) and the API's run status, wall and CPU: on a machine whose
    cores the workers keep busy, the wall time is mostly waiting for a core; the CPU time is
    what the status costs (for the CLI: the child's user + system time; for the API: the
    server process's; for the command in this process: this thread's)."""

    env: dict[str, str]
    run_id: str
    api: httpx.Client
    server_pid: int
    server_env: dict[str, str]  # env with VALUERANK_API_URL (and the token): the CLI asks the API
    times: dict[str, dict[str, list[float]]] = field(default_factory=dict)

    def _add(self, phase: str, what: str, ms: float) -> None:
        self.times.setdefault(phase, {}).setdefault(what, []).append(ms)

    def _child(self, phase: str, what: str, *args: str, env: dict[str, str] | None = None) -> None:
        t = time.perf_counter()
        proc = subprocess.Popen(
            vr_cmd(*args), env=env or self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        assert proc.stderr is not None
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        self._add(phase, what, (time.perf_counter() - t) * 1000)
        self._add(phase, f"{what}_cpu", (usage.ru_utime + usage.ru_stime) * 1000)
        assert os.waitstatus_to_exitcode(status) == 0, err

    def once(self, phase: str, *, startup: bool) -> None:
        self._child(phase, "cli_runs_status", "runs", "status", self.run_id, "--json")
        status = ("runs", "status", self.run_id, "--json")
        self._child(phase, "cli_runs_status_server", *status, env=self.server_env)
        if startup:  # the same at any run size: measured after the run, not stealing its CPU
            self._child(phase, "cli_startup", "runs", "status", "--help")
        self._in_process(phase)
        for name, path in (
            ("api_queue_runs", f"/api/queue/runs/{self.run_id}"),
            ("api_runs", f"/api/runs/{self.run_id}"),
        ):
            # The server's CPU is read in clock ticks (10 ms): averaged over a few requests.
            cpu = cpu_seconds(self.server_pid) or 0.0
            for _ in range(API_REPEAT):
                t = time.perf_counter()
                self.api.get(path).raise_for_status()
                self._add(phase, name, (time.perf_counter() - t) * 1000)
            spent = (cpu_seconds(self.server_pid) or 0.0) - cpu
            self._add(phase, f"{name}_cpu", spent * 1000 / API_REPEAT)

    def _in_process(self, phase: str) -> None:
        """The same command in this process (its imports done): what it costs beyond start-up."""
        from typer.testing import CliRunner

        from valuerank.cli import app

        t, cpu = time.perf_counter(), time.thread_time()
        result = CliRunner().invoke(app, ["runs", "status", self.run_id, "--json"], env=self.env)
        self._add(phase, "cli_own_work", (time.perf_counter() - t) * 1000)
        self._add(phase, "cli_own_work_cpu", (time.thread_time() - cpu) * 1000)
        assert result.exit_code == 0, result.output

    def summary(self) -> dict[str, Any]:
        return {
            phase: {what: stats(ms) for what, ms in sorted(by.items())}
            for phase, by in self.times.items()
        }


def plot(samples: list[Sample], jobs: int, workers: int, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    window = 5.0
    ts, rates = [], []
    for i, s in enumerate(samples):
        j = i
        while j > 0 and s.t - samples[j - 1].t <= window:
            j -= 1
        if s.t > samples[j].t:
            ts.append(s.t)
            rates.append((s.done - samples[j].done) / (s.t - samples[j].t))
    top.plot(ts, rates, color="tab:blue")
    top.set_ylabel("jobs/s (5 s window)")
    top.set_title(f"bench.scale: {jobs:,} jobs, {workers} worker processes, PostgreSQL")
    top.grid(alpha=0.3)
    for name in sorted({n for s in samples for n in s.rss}):
        points = [(s.t, s.rss[name]) for s in samples if name in s.rss]
        bottom.plot([p[0] for p in points], [p[1] for p in points], label=name)
    bottom.set_ylabel("RSS (MB)")
    bottom.set_xlabel("seconds since the run was created")
    bottom.set_ylim(bottom=0)
    bottom.legend(loc="lower right")
    bottom.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
