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

Enqueue-to-start latency (`ours_latency`, in `bench.queue_start`): one job per transaction at
100 jobs/s for 5 s to an idle `valuerank worker -c 4`, at the default settings (poll 1 s; on
PostgreSQL the worker also LISTENs and is woken by the enqueue's NOTIFY, see queue/wakeup.py)
and with a 0.05 s poll; p50/p95/p99 of started_at - created_at (created_at is the enqueue
transaction's start, so this includes that transaction), and `commit_to_start` p50/p95: from
the enqueue transaction's last statement (just before its COMMIT, which sends the NOTIFY) to
started_at, the part the worker's waking decides. `--only latency` runs just that part, `--only
throughput` all but it.

Across hosts (`--latency-ms 0,1,5`): the whole comparison once per one-way latency, the workers
of every system (ours, procrastinate, PgQueuer) reaching PostgreSQL through
`bench.latency_proxy` (its own process, D ms each way); enqueueing, the meter and the schemas
go direct, and 0 is direct (the default, as before). Each system opens its connections before
its timing starts (ours: 5 of its pool's connections, the most it uses, are warmed; the peers
open theirs), as a long-running worker would have them. `by_latency_ms` has each latency's
figures (the top-level ones are the first latency's), its measured `round_trip_ms` (`SELECT 1`,
median) and `flights_per_job`: the round trips the worker's connections waited for, per job,
counted by the proxy over the timed run (the connections' set-up included: a few per
connection); each configuration's row also has the `connections` its worker opened in a run.

Under load (`--load N`): after the quiet comparison, the same comparison (workers direct)
again while N CPU-burning processes run (`bench.cpu_load`: started by the benchmark, killed
when that part ends, also on an error). `loaded` has its figures, the burners and the load
average with them running; `ratio_quiet_and_loaded` has both ratios side by side per K.

    python -m bench.queue --json [--jobs N] [--claimers 1,4,16] [--repeats 3]
                                 [--only latency|throughput] [--latency-ms 0,1,5] [--load 2]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import psycopg

from bench.cpu_load import burners
from bench.latency_proxy import Proxy, latency_proxy, target_of, via
from bench.pg import DEFAULT_URL, Schema, in_flight_peak, install_in_flight_meter, libpq
from bench.queue_peers import PeerConfig, peer_configs, quiet_peer_logs
from bench.queue_start import latency_only, latency_rows, load_since

# The connections a worker draining no-op jobs holds at most (its pool keeps up to
# VALUERANK_DB_POOL_SIZE; this benchmark's workers never used more than 5).
KEPT_CONNECTIONS = 5

# -- ours -------------------------------------------------------------------------------------


async def ours(
    url: str, jobs: int, claimers: int, meter: bool = False, worker_url: str | None = None
) -> float:
    """`valuerank worker -c K` (see the module doc) draining `jobs` no-op jobs; jobs/s. With
    `worker_url`, the worker's own engine connects there, its pool warmed first."""
    from valuerank.cli.worker_cmd import build_worker
    from valuerank.cli.worker_settings import worker_settings
    from valuerank.db import create_database
    from valuerank.db.migrate import upgrade
    from valuerank.orgs import ensure_org
    from valuerank.queue import JobSpec, enqueue_many
    from valuerank.queue.builtin import NOOP

    db = create_database(url)
    worker_db = db if worker_url is None else create_database(worker_url)
    try:
        await upgrade(db)
        async with db.transaction() as conn:
            org = await ensure_org(conn, "bench")
            await enqueue_many(conn, [JobSpec(kind=NOOP, org_id=org) for _ in range(jobs)])
        if meter:
            install_in_flight_meter(url, "jobs", "running")
        if worker_db is not db:
            async with contextlib.AsyncExitStack() as stack:
                for _ in range(KEPT_CONNECTIONS):
                    await stack.enter_async_context(worker_db.engine.connect())
        worker, pipeline = build_worker(worker_db, worker_settings(), concurrency=claimers)
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
        if worker_db is not db:
            await worker_db.dispose()


def ours_config(k: int) -> PeerConfig:
    return PeerConfig(
        "valuerank",
        f"valuerank worker -c {k}",
        lambda url, jobs, meter, worker_url: ours(
            url, jobs, k, meter, None if worker_url == url else worker_url
        ),
    )


# -- driver -----------------------------------------------------------------------------------


@dataclass
class Measured:
    config: PeerConfig
    max_in_flight: int | None = None
    runs: list[float] = field(default_factory=list)
    flights: list[float] = field(default_factory=list)  # per job, through the proxy
    connections: int | None = None  # the most the worker opened in one run, via the proxy

    @property
    def median(self) -> float:
        return statistics.median(self.runs)

    def row(self) -> dict[str, Any]:
        row = {
            "config": self.config.label,
            "jobs_per_second": round(self.median, 1),
            "runs": [round(r, 1) for r in self.runs],
            "max_in_flight": self.max_in_flight,
        }
        if self.flights:
            row["flights_per_job"] = round(statistics.median(self.flights), 2)
            row["connections"] = self.connections
        return row


class PeerFailed(RuntimeError):
    """A configuration could not run: the comparison would be incomplete."""


@dataclass
class OneRun:
    rate: float
    peak: int  # -1: not metered
    flights_per_job: float | None  # None: direct
    connections: int = 0  # opened through the proxy


async def run_one(
    base_url: str, config: PeerConfig, jobs: int, meter: bool, proxy: Proxy | None = None
) -> OneRun:
    with Schema(base_url, config.system) as schema:
        worker_url = schema.url if proxy is None else via(schema.url, proxy.port)
        before = proxy.counts() if proxy else {}
        try:
            rate = await config.run(schema.url, jobs, meter, worker_url)
        except Exception as exc:
            raise PeerFailed(
                f"{config.system} ({config.label}) failed: {type(exc).__name__}: {exc}"
            ) from exc
        after = proxy.counts() if proxy else before
        flights = (after["flights"] - before["flights"]) / jobs if proxy else None
        peak = in_flight_peak(schema.url) if meter else -1
        return OneRun(
            rate, peak, flights, after.get("connections", 0) - before.get("connections", 0)
        )


async def measure_k(
    base_url: str, jobs: int, k: int, repeats: int, proxy: Proxy | None = None
) -> list[Measured]:
    """Warm-up with the in-flight meter, then `repeats` timed passes in alternating order."""
    measured = [Measured(c) for c in [ours_config(k), *peer_configs(k)]]
    at = f" +{proxy.delay_ms:g} ms" if proxy else ""
    for m in measured:
        m.max_in_flight = (await run_one(base_url, m.config, jobs, True, proxy)).peak
    for rep in range(repeats):
        for m in measured if rep % 2 == 0 else reversed(measured):
            one = await run_one(base_url, m.config, jobs, False, proxy)
            m.runs.append(one.rate)
            if one.flights_per_job is not None:
                m.flights.append(one.flights_per_job)
                m.connections = max(m.connections or 0, one.connections)
            print(
                f"K={k}{at} rep {rep + 1}: {m.config.system} ({m.config.label}): "
                f"{one.rate:.1f} jobs/s",
                file=sys.stderr,
            )
    return measured


async def throughput(
    base_url: str, jobs: int, claimer_counts: list[int], repeats: int, proxy: Proxy | None
) -> dict[str, Any]:
    """Every system at every K (workers through `proxy` if given); the best of each per K."""
    per_system: dict[str, dict[str, float]] = {}
    best_config: dict[str, dict[str, str]] = {}
    grid: dict[str, dict[str, list[dict[str, Any]]]] = {}
    ratio: dict[str, float] = {}
    flights: dict[str, dict[str, float]] = {}
    for k in claimer_counts:
        measured = await measure_k(base_url, jobs, k, repeats, proxy)
        grid[str(k)] = {}
        best_config[str(k)] = {}
        for m in measured:
            grid[str(k)].setdefault(m.config.system, []).append(m.row())
            best = per_system.setdefault(m.config.system, {}).get(str(k), 0.0)
            if m.median > best:
                per_system[m.config.system][str(k)] = round(m.median, 1)
                best_config[str(k)][m.config.system] = m.config.label
                if m.flights:
                    flights.setdefault(str(k), {})[m.config.system] = round(
                        statistics.median(m.flights), 2
                    )
        peers = [v[str(k)] for s, v in per_system.items() if s != "valuerank"]
        ratio[str(k)] = round(per_system["valuerank"][str(k)] / max(peers), 3)
    result: dict[str, Any] = {
        "jobs_per_second": per_system,
        "best_config": best_config,
        "ratio_vs_best_peer": ratio,
    }
    if proxy is not None:
        result["flights_per_job"] = flights  # of each system's best configuration
    result["configurations"] = grid
    return result


def round_trip_ms(base_url: str, proxy: Proxy | None) -> float:
    """Median of 20 `SELECT 1` on one connection, direct or through `proxy`."""
    url = libpq(base_url)
    where = {} if proxy is None else {"host": "127.0.0.1", "port": proxy.port}
    with psycopg.connect(url, autocommit=True, **where) as conn:  # type: ignore[arg-type]
        timings = []
        for _ in range(20):
            start = time.perf_counter()
            conn.execute("SELECT 1").fetchone()
            timings.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(timings), 3)


async def at_latency(
    base_url: str, jobs: int, claimer_counts: list[int], repeats: int, delay_ms: float
) -> dict[str, Any]:
    """`throughput` with the workers `delay_ms` one-way from PostgreSQL (0: direct)."""
    if delay_ms == 0:
        result = await throughput(base_url, jobs, claimer_counts, repeats, None)
        return {"round_trip_ms": round_trip_ms(base_url, None), **result}
    with latency_proxy(delay_ms, target_of(libpq(base_url))) as proxy:
        result = await throughput(base_url, jobs, claimer_counts, repeats, proxy)
        return {"round_trip_ms": round_trip_ms(base_url, proxy), **result}


async def under_load(
    base_url: str, jobs: int, claimer_counts: list[int], repeats: int, n: int
) -> dict[str, Any]:
    """`throughput` (workers direct) while `n` CPU burners run, with the load average."""
    with burners(n) as load:
        result = await throughput(base_url, jobs, claimer_counts, repeats, None)
    return {**load.report(), **result}


async def main_async(
    base_url: str,
    jobs: int,
    claimer_counts: list[int],
    repeats: int,
    latencies: list[float] | None = None,
    start_latency: bool = True,
    load: int = 0,
) -> dict[str, Any]:
    quiet_peer_logs()
    load_before = os.getloadavg()
    latencies = latencies or [0.0]
    by_latency = {
        f"{d:g}": await at_latency(base_url, jobs, claimer_counts, repeats, d) for d in latencies
    }
    first = by_latency[f"{latencies[0]:g}"]
    latency = await latency_rows(base_url) if start_latency else None
    result: dict[str, Any] = {
        "database": base_url.split("@")[-1],
        "jobs": jobs,
        "claimers": claimer_counts,
        "repeats": repeats,
        "jobs_per_second": first["jobs_per_second"],
        "best_config": first["best_config"],
        "ratio_vs_best_peer": first["ratio_vs_best_peer"],
        "configurations": first["configurations"],
    }
    if latencies != [0.0]:
        result["latency_ms"] = latencies
        result["ratio_by_latency_ms"] = {d: r["ratio_vs_best_peer"] for d, r in by_latency.items()}
        result["by_latency_ms"] = by_latency
    if load:
        loaded = await under_load(base_url, jobs, claimer_counts, repeats, load)
        result["loaded"] = loaded
        result["ratio_quiet_and_loaded"] = {
            k: {"quiet": quiet, "loaded": loaded["ratio_vs_best_peer"][k]}
            for k, quiet in first["ratio_vs_best_peer"].items()
        }
    if latency is not None:
        result["valuerank_enqueue_to_start_latency"] = latency
    return {
        **result,
        "load_average": load_since(load_before),
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
        choices=["all", "latency", "throughput"],
        default="all",
        help="latency: only the enqueue-to-start latency (seconds instead of many minutes); "
        "throughput: all but that",
    )
    parser.add_argument(
        "--latency-ms",
        default="0",
        help="one-way latencies (ms) between the workers and PostgreSQL, e.g. 0,1,5 (0: direct)",
    )
    parser.add_argument(
        "--load",
        type=int,
        default=0,
        help="also run the comparison while this many CPU-burning processes run (0: not)",
    )
    args = parser.parse_args()
    url = os.environ.get("VALUERANK_BENCH_DATABASE_URL", DEFAULT_URL)
    counts = [int(c) for c in args.claimers.split(",")]
    try:
        if args.only == "latency":
            result = asyncio.run(latency_only(url))
        else:
            latencies = [float(d) for d in args.latency_ms.split(",")]
            result = asyncio.run(
                main_async(
                    url,
                    args.jobs,
                    counts,
                    args.repeats,
                    latencies,
                    args.only == "all",
                    args.load,
                )
            )
    except PeerFailed as exc:
        print(f"bench.queue: {exc}", file=sys.stderr)
        raise SystemExit(1) from exc
    print(json.dumps(result, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
