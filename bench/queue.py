"""Queue throughput: enqueue → claim → complete of no-op jobs on PostgreSQL, ours side by side
with procrastinate (3.x) and PgQueuer (1.x) on the same server in the same run.

Same work for all: N jobs enqueued in bulk the system's own way, then drained by a worker
whose handler does nothing; the drain is timed. Every run gets a fresh schema (dropped after).

- valuerank: the worker `valuerank worker -c K` runs (`build_worker`: VALUERANK_WORKER_*
  settings at their defaults, the built-in and pipeline kinds, `run_forever` with its chores:
  webhook deliveries every second, the reaper every 30 s, maintenance every 300 s, the first
  one interval after start, so not within a drain of a few seconds), draining the built-in
  `noop` kind; timed from its start until the last success is committed. What differs from
  the CLI: it runs in this process (no console output, no signal handlers) and is stopped
  once the N jobs are done.
- procrastinate and PgQueuer: each over a small grid that includes its defaults
  (`bench.queue_peers`); the best configuration per K is the one compared.

K is ours' `-c K`: at most K handlers run at once, and at most 2K jobs are in flight (claimed
and not yet recorded as done: a worker claims its next job while a success is being written,
but holds no more than K such successes). Every configuration's `max_in_flight` is measured
(completions being written count): an untimed warm-up pass runs each once with a counter kept
by database triggers (`bench.pg`). The peers' grids include configurations with more in flight
than K (PgQueuer's defaults have no cap); their measured maximum is reported next to them.
Then `--repeats` timed passes, the configurations in alternating order (forward, backward,
forward); each figure is the median. A configuration that fails stops the benchmark with a
non-zero exit: no peer is silently dropped.

Enqueue-to-start latency (`ours_latency`): one job per transaction at 100 jobs/s for 5 s to
an idle `valuerank worker -c 4`, at the default settings (poll 1 s; on PostgreSQL the worker
also LISTENs and is woken by the enqueue's NOTIFY, see queue/wakeup.py) and with a 0.05 s
poll; p50/p95/p99 of started_at - created_at (created_at is the enqueue transaction's start,
so this includes that transaction), and `commit_to_start` p50/p95: from the enqueue
transaction's last statement (just before its COMMIT, which sends the NOTIFY) to started_at,
the part the worker's waking decides. `--only latency` runs just that part.

    python -m bench.queue --json [--jobs N] [--claimers 1,4,16] [--repeats 3] [--only latency]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from bench.pg import DEFAULT_URL, Schema, in_flight_peak, install_in_flight_meter
from bench.queue_peers import PeerConfig, peer_configs, quiet_peer_logs

# -- ours -------------------------------------------------------------------------------------


async def ours(url: str, jobs: int, claimers: int, meter: bool = False) -> float:
    """`valuerank worker -c K` (see the module doc) draining `jobs` no-op jobs; jobs/s."""
    from valuerank.cli.worker_cmd import build_worker
    from valuerank.cli.worker_settings import worker_settings
    from valuerank.db import create_database
    from valuerank.db.migrate import upgrade
    from valuerank.orgs import ensure_org
    from valuerank.queue import JobSpec, enqueue_many
    from valuerank.queue.builtin import NOOP

    db = create_database(url)
    try:
        await upgrade(db)
        async with db.transaction() as conn:
            org = await ensure_org(conn, "bench")
            await enqueue_many(conn, [JobSpec(kind=NOOP, org_id=org) for _ in range(jobs)])
        if meter:
            install_in_flight_meter(url, "jobs", "running")
        worker, pipeline = build_worker(db, worker_settings(), concurrency=claimers)
        start = time.perf_counter()
        task = asyncio.create_task(worker.run_forever())
        while worker.stats.succeeded < jobs and not task.done():
            await asyncio.sleep(0.002)
        elapsed = time.perf_counter() - start
        worker.stop()
        await task
        await pipeline.aclose()
        done = worker.stats.succeeded
        if done != jobs:
            raise RuntimeError(f"valuerank: {done} of {jobs} jobs done ({worker.stats})")
        return jobs / elapsed
    finally:
        await db.dispose()


async def ours_latency(
    url: str, rate: float, seconds: float, claimers: int, poll_seconds: float | None = None
) -> dict[str, Any]:
    """Enqueue one job every 1/rate s for `seconds` while `valuerank worker -c K` runs (with
    VALUERANK_WORKER_POLL_SECONDS=`poll_seconds` if given); started_at - created_at. Timing
    starts once the worker listens (PostgreSQL), as it does from then on."""
    from sqlalchemy import select, text

    from valuerank.cli.worker_cmd import build_worker
    from valuerank.cli.worker_settings import WorkerSettings, worker_settings
    from valuerank.db import create_database
    from valuerank.db.migrate import upgrade
    from valuerank.db.tables import jobs as jobs_table
    from valuerank.orgs import ensure_org
    from valuerank.queue import JobSpec, enqueue
    from valuerank.queue.builtin import NOOP

    db = create_database(url)
    try:
        await upgrade(db)
        async with db.transaction() as conn:
            org = await ensure_org(conn, "bench")
        ws = (
            worker_settings() if poll_seconds is None else WorkerSettings(poll_seconds=poll_seconds)
        )
        worker, pipeline = build_worker(db, ws, concurrency=claimers)
        task = asyncio.create_task(worker.run_forever())
        listens = worker.wakeup is not None
        if worker.wakeup is not None:
            await asyncio.wait_for(worker.wakeup.listener.connected.wait(), 30)
        n = int(rate * seconds)
        t0 = time.perf_counter()
        committing: dict[str, Any] = {}  # job id → the database clock just before COMMIT
        for i in range(n):
            async with db.transaction() as conn:
                job = await enqueue(conn, JobSpec(kind=NOOP, org_id=org))
                committing[job.job_id] = await conn.scalar(text("SELECT clock_timestamp()"))
            await asyncio.sleep(max(0.0, t0 + (i + 1) / rate - time.perf_counter()))
        deadline = time.perf_counter() + 30
        while worker.stats.succeeded < n and time.perf_counter() < deadline:
            await asyncio.sleep(0.05)
        worker.stop()
        await task
        await pipeline.aclose()
        async with db.transaction() as conn:
            rows = (
                await conn.execute(
                    select(jobs_table.c.id, jobs_table.c.created_at, jobs_table.c.started_at).where(
                        jobs_table.c.started_at.is_not(None)
                    )
                )
            ).all()
        lat = sorted((s - c).total_seconds() * 1000 for _, c, s in rows)
        after = sorted((s - committing[i]).total_seconds() * 1000 for i, _, s in rows)
        q = statistics.quantiles(lat, n=100) if len(lat) > 1 else lat * 99
        qa = statistics.quantiles(after, n=100) if len(after) > 1 else after * 99
        return {
            "rate_jobs_per_s": rate,
            "jobs": n,
            "claimers": claimers,
            "poll_seconds": ws.poll_seconds,
            "listen": listens,
            "started": len(lat),
            "p50_ms": round(q[49], 2),
            "p95_ms": round(q[94], 2),
            "p99_ms": round(q[98], 2),
            "max_ms": round(lat[-1], 2) if lat else None,
            "commit_to_start_p50_ms": round(qa[49], 2),
            "commit_to_start_p95_ms": round(qa[94], 2),
        }
    finally:
        await db.dispose()


def ours_config(k: int) -> PeerConfig:
    return PeerConfig(
        "valuerank",
        f"valuerank worker -c {k}",
        lambda url, jobs, meter: ours(url, jobs, k, meter),
    )


# -- driver -----------------------------------------------------------------------------------


@dataclass
class Measured:
    config: PeerConfig
    max_in_flight: int | None = None
    runs: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.runs)

    def row(self) -> dict[str, Any]:
        return {
            "config": self.config.label,
            "jobs_per_second": round(self.median, 1),
            "runs": [round(r, 1) for r in self.runs],
            "max_in_flight": self.max_in_flight,
        }


class PeerFailed(RuntimeError):
    """A configuration could not run: the comparison would be incomplete."""


async def run_one(base_url: str, config: PeerConfig, jobs: int, meter: bool) -> tuple[float, int]:
    with Schema(base_url, config.system) as schema:
        try:
            rate = await config.run(schema.url, jobs, meter)
        except Exception as exc:
            raise PeerFailed(
                f"{config.system} ({config.label}) failed: {type(exc).__name__}: {exc}"
            ) from exc
        return rate, in_flight_peak(schema.url) if meter else -1


async def measure_k(base_url: str, jobs: int, k: int, repeats: int) -> list[Measured]:
    """Warm-up with the in-flight meter, then `repeats` timed passes in alternating order."""
    measured = [Measured(c) for c in [ours_config(k), *peer_configs(k)]]
    for m in measured:
        _, m.max_in_flight = await run_one(base_url, m.config, jobs, meter=True)
    for rep in range(repeats):
        for m in measured if rep % 2 == 0 else reversed(measured):
            rate, _ = await run_one(base_url, m.config, jobs, meter=False)
            m.runs.append(rate)
            print(
                f"K={k} rep {rep + 1}: {m.config.system} ({m.config.label}): {rate:.1f} jobs/s",
                file=sys.stderr,
            )
    return measured


async def latency_rows(base_url: str) -> list[dict[str, Any]]:
    """`ours_latency` at the default poll interval (1 s, LISTEN on) and at a 0.05 s one."""
    rows = []
    for poll in (None, 0.05):
        with Schema(base_url, "latency") as schema:
            rows.append(
                await ours_latency(
                    schema.url, rate=100.0, seconds=5.0, claimers=4, poll_seconds=poll
                )
            )
    return rows


def _load(before: tuple[float, float, float]) -> dict[str, list[float]]:
    return {
        "before": [round(x, 2) for x in before],
        "after": [round(x, 2) for x in os.getloadavg()],
    }


async def latency_only(base_url: str) -> dict[str, Any]:
    load_before = os.getloadavg()
    latency = await latency_rows(base_url)
    return {
        "database": base_url.split("@")[-1],
        "valuerank_enqueue_to_start_latency": latency,
        "load_average": _load(load_before),
        "cpus": os.cpu_count(),
    }


async def main_async(
    base_url: str, jobs: int, claimer_counts: list[int], repeats: int
) -> dict[str, Any]:
    quiet_peer_logs()
    load_before = os.getloadavg()
    per_system: dict[str, dict[str, float]] = {}
    best_config: dict[str, dict[str, str]] = {}
    grid: dict[str, dict[str, list[dict[str, Any]]]] = {}
    ratio: dict[str, float] = {}
    for k in claimer_counts:
        measured = await measure_k(base_url, jobs, k, repeats)
        grid[str(k)] = {}
        best_config[str(k)] = {}
        for m in measured:
            grid[str(k)].setdefault(m.config.system, []).append(m.row())
            best = per_system.setdefault(m.config.system, {}).get(str(k), 0.0)
            if m.median > best:
                per_system[m.config.system][str(k)] = round(m.median, 1)
                best_config[str(k)][m.config.system] = m.config.label
        peers = [v[str(k)] for s, v in per_system.items() if s != "valuerank"]
        ratio[str(k)] = round(per_system["valuerank"][str(k)] / max(peers), 3)
    latency = await latency_rows(base_url)
    return {
        "database": base_url.split("@")[-1],
        "jobs": jobs,
        "claimers": claimer_counts,
        "repeats": repeats,
        "jobs_per_second": per_system,
        "best_config": best_config,
        "ratio_vs_best_peer": ratio,
        "configurations": grid,
        "valuerank_enqueue_to_start_latency": latency,
        "load_average": _load(load_before),
        "cpus": os.cpu_count(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--claimers", default="1,4,16")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--only",
        choices=["all", "latency"],
        default="all",
        help="latency: only the enqueue-to-start latency (seconds instead of many minutes)",
    )
    args = parser.parse_args()
    url = os.environ.get("VALUERANK_BENCH_DATABASE_URL", DEFAULT_URL)
    counts = [int(c) for c in args.claimers.split(",")]
    try:
        if args.only == "latency":
            result = asyncio.run(latency_only(url))
        else:
            result = asyncio.run(main_async(url, args.jobs, counts, args.repeats))
    except PeerFailed as exc:
        print(f"bench.queue: {exc}", file=sys.stderr)
        raise SystemExit(1) from exc
    print(json.dumps(result, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
