"""Measuring a command as a user runs it, for `bench.e2e`: wall time, the peak RSS of its whole
process tree (sampled from /proc), its CPU time (and its children's), and when a first result
appeared (a probe polled while it runs)."""

from __future__ import annotations

import os
import resource
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")
SAMPLE_SECONDS = 0.05


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            text = Path(f"/proc/{pid}/task/{task}/children").read_text()
            found += [int(c) for c in text.split()]
    except OSError:
        pass
    return found


def tree_rss(root: int) -> int:
    """Resident bytes of `root` and every descendant now (0 once it has exited)."""
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        try:
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
        except (OSError, IndexError, ValueError):
            continue
        stack += _children(pid)
    return total


@dataclass
class Measured:
    argv: Sequence[str]
    seconds: float
    peak_rss_bytes: int
    cpu_seconds: float
    stdout: str
    stderr: str
    returncode: int
    first_result_s: float | None = None
    # (seconds since the origin, tree RSS in bytes), every 50 ms.
    series: list[tuple[float, int]] = field(default_factory=list)

    def peak_until(self, seconds: float) -> int:
        """The peak RSS sampled up to `seconds` after the origin."""
        return max((rss for t, rss in self.series if t <= seconds), default=0)


def run_measured(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | Path,
    first_result: Callable[[], bool] | None = None,
    started: float | None = None,
    timeout: float = 3600.0,
) -> Measured:
    """Run `argv` to its end, sampling its process tree's RSS every 50 ms and polling
    `first_result` (seconds since `started`, default this call's start, when it first holds).
    CPU time is that of the command and the children it waited for (RUSAGE_CHILDREN)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    origin = t0 if started is None else started
    proc = subprocess.Popen(
        list(argv),
        env=dict(env),
        cwd=str(cwd),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    peak, first = 0, None
    series: list[tuple[float, int]] = []
    done = threading.Event()

    def sample() -> None:
        nonlocal peak, first
        while not done.is_set():
            rss = tree_rss(proc.pid)
            series.append((time.monotonic() - origin, rss))
            peak = max(peak, rss)
            if first is None and first_result is not None:
                try:
                    if first_result():
                        first = time.monotonic() - origin
                except Exception:  # a store half-written by the command: try again later
                    pass
            done.wait(SAMPLE_SECONDS)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    finally:
        done.set()
        sampler.join()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    seconds = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Measured(argv, seconds, peak, cpu, stdout, stderr, proc.returncode, first, series)
