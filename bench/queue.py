"""Queue throughput: enqueue → claim → complete of no-op jobs on PostgreSQL, ours side by side
with procrastinate (3.x) and PgQueuer (1.x) on the same server in the same run.

Each system gets its own fresh schema (dropped afterwards). Same work for all: N jobs
enqueued in bulk, then drained by K concurrent consumers whose handler does nothing; the
drain is timed. Plus, for ours, enqueue-to-start latency p50/p95 at a steady load.

How each system runs its K consumers (each as its users run it, doing its own bookkeeping):
- valuerank: one `Worker` of concurrency K, exactly what `valuerank worker -c K` runs (the
  production code path: claims for its free slots in one statement, leases with fencing
  tokens, heartbeats, a `task_started` and a `task_complete` event with progress per job in
  the transaction of each change, NOTIFY, counters, caps/rate-limit/pause checks in the
  claim; successful jobs that finish together are completed in one transaction);
- procrastinate: one worker of concurrency K (`run_worker_async(concurrency=K)`);
- PgQueuer: the faster of K queue managers of batch size 1, and one manager of batch K/2
  (`pgqueuer_configs`; up to 2K jobs in flight where ours keeps K).

    python -m bench.queue --json [--jobs N] [--claimers 1,4,16]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

import psycopg

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"


def _libpq(url: str) -> str:
    scheme, rest = url.split("://", 1)
    return "postgresql://" + rest if scheme.startswith("postgres") else url


class Schema:
    """A fresh schema for one system; URL/conninfo with its search_path."""

    def __init__(self, base_url: str, system: str) -> None:
        self.base = _libpq(base_url)
        self.name = f"bench_{system}_{uuid.uuid4().hex[:8]}"
        sep = "&" if "?" in self.base else "?"
        self.url = f"{self.base}{sep}options={quote(f'-csearch_path={self.name}')}"

    def __enter__(self) -> Schema:
        with psycopg.connect(self.base, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{self.name}"')
        return self

    def __exit__(self, *exc: object) -> None:
        with psycopg.connect(self.base, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{self.name}" CASCADE')


# -- ours -------------------------------------------------------------------------------------


async def ours(url: str, jobs: int, claimers: int) -> float:
    from valuerank.db import create_database
    from valuerank.db.migrate import upgrade
    from valuerank.orgs import ensure_org
    from valuerank.queue import JobSpec, QueueSettings, Worker, enqueue_many

    db = create_database(url)
    try:
        await upgrade(db)
        async with db.transaction() as conn:
            org = await ensure_org(conn, "bench")
            await enqueue_many(conn, [JobSpec(kind="noop", org_id=org) for _ in range(jobs)])
        settings = QueueSettings(poll_seconds=0.01, reap_interval_seconds=3600)

        async def noop(job: Any) -> None:
            return None

        worker = Worker(db, settings=settings, concurrency=claimers, handlers={"noop": noop})
        start = time.perf_counter()
        await worker.run_until_idle()
        elapsed = time.perf_counter() - start
        done = worker.stats.succeeded
        assert done == jobs, f"ours: {done} of {jobs} jobs done"
        return jobs / elapsed
    finally:
        await db.dispose()


async def ours_latency(url: str, rate: float, seconds: float, claimers: int) -> dict[str, Any]:
    """Enqueue one job every 1/rate s for `seconds` while K workers run; started_at - created_at."""
    from sqlalchemy import select

    from valuerank.db import create_database
    from valuerank.db.migrate import upgrade
    from valuerank.db.tables import jobs as jobs_table
    from valuerank.orgs import ensure_org
    from valuerank.queue import JobSpec, QueueSettings, Worker, enqueue

    db = create_database(url)
    try:
        await upgrade(db)
        async with db.transaction() as conn:
            org = await ensure_org(conn, "bench")
        settings = QueueSettings(poll_seconds=0.01, reap_interval_seconds=3600)

        async def noop(job: Any) -> None:
            return None

        workers = [Worker(db, settings=settings, concurrency=claimers, handlers={"noop": noop})]
        tasks = [asyncio.create_task(w.run_forever()) for w in workers]
        n = int(rate * seconds)
        t0 = time.perf_counter()
        for i in range(n):
            async with db.transaction() as conn:
                await enqueue(conn, JobSpec(kind="noop", org_id=org))
            await asyncio.sleep(max(0.0, t0 + (i + 1) / rate - time.perf_counter()))
        deadline = time.perf_counter() + 30
        while sum(w.stats.succeeded for w in workers) < n and time.perf_counter() < deadline:
            await asyncio.sleep(0.05)
        for w in workers:
            w.stop()
        await asyncio.gather(*tasks)
        async with db.transaction() as conn:
            rows = await conn.execute(
                select(jobs_table.c.created_at, jobs_table.c.started_at).where(
                    jobs_table.c.started_at.is_not(None)
                )
            )
            lat = sorted((s - c).total_seconds() * 1000 for c, s in rows)
        q = statistics.quantiles(lat, n=100) if len(lat) > 1 else lat * 99
        return {
            "rate_jobs_per_s": rate,
            "jobs": n,
            "claimers": claimers,
            "p50_ms": round(q[49], 2),
            "p95_ms": round(q[94], 2),
        }
    finally:
        await db.dispose()


# -- procrastinate ----------------------------------------------------------------------------


async def procrastinate_(url: str, jobs: int, claimers: int) -> float:
    import procrastinate

    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url))
    done = 0

    @app.task(name="noop")
    async def noop() -> None:
        nonlocal done
        done += 1

    async with app.open_async():
        await app.schema_manager.apply_schema_async()
        for start in range(0, jobs, 1000):
            await noop.batch_defer_async(*({} for _ in range(min(1000, jobs - start))))
        t = time.perf_counter()
        await app.run_worker_async(
            concurrency=claimers,
            wait=False,
            install_signal_handlers=False,
            listen_notify=False,
            fetch_job_polling_interval=0.01,
            delete_jobs="never",
        )
        elapsed = time.perf_counter() - t
    assert done == jobs, f"procrastinate: {done} of {jobs} jobs done"
    return jobs / elapsed


# -- PgQueuer ---------------------------------------------------------------------------------


def pgqueuer_configs(claimers: int) -> dict[str, tuple[int, int, int]]:
    """PgQueuer's ways to run K consumers: {label: (managers, batch_size, max_concurrent_tasks)}.

    PgQueuer needs max_concurrent_tasks >= 2 * batch_size, so none keeps fewer than 2 jobs in
    flight; each keeps at most 2K (generous to the peer: ours keeps at most K). The bench runs
    both and reports the faster: PgQueuer's best, not its worst, is what ours is compared to."""
    return {
        f"{claimers} manager(s), batch 1": (claimers, 1, 2),
        f"1 manager, batch {max(1, claimers // 2)}": (1, max(1, claimers // 2), max(2, claimers)),
    }


async def pgqueuer_once(url: str, jobs: int, managers: int, batch: int, tasks: int) -> float:
    from pgqueuer import QueueManager
    from pgqueuer.db import PsycopgDriver
    from pgqueuer.queries import Queries
    from pgqueuer.types import QueueExecutionMode

    setup = await psycopg.AsyncConnection.connect(url, autocommit=True)
    queries = Queries(PsycopgDriver(setup))
    await queries.install(create_schema=False)
    for start in range(0, jobs, 1000):
        n = min(1000, jobs - start)
        await queries.enqueue(["noop"] * n, [None] * n, [0] * n)
    done = 0
    conns = [await psycopg.AsyncConnection.connect(url, autocommit=True) for _ in range(managers)]
    qms = []
    for conn in conns:
        qm = QueueManager(Queries(PsycopgDriver(conn)))

        @qm.entrypoint("noop")
        async def noop(job: Any) -> None:
            nonlocal done
            done += 1

        qms.append(qm)
    t = time.perf_counter()
    await asyncio.gather(
        *(
            qm.run(mode=QueueExecutionMode.drain, batch_size=batch, max_concurrent_tasks=tasks)
            for qm in qms
        )
    )
    elapsed = time.perf_counter() - t
    for conn in [*conns, setup]:
        await conn.close()
    assert done == jobs, f"pgqueuer: {done} of {jobs} jobs done"
    return jobs / elapsed


PGQUEUER_BEST: dict[int, str] = {}  # claimers -> the configuration that won


async def pgqueuer_(url: str, jobs: int, claimers: int) -> float:
    """The best of PgQueuer's configurations (`pgqueuer_configs`), each on a fresh schema."""
    best = 0.0
    for label, (managers, batch, tasks) in pgqueuer_configs(claimers).items():
        with Schema(url, "pgq") as schema:
            rate = await pgqueuer_once(schema.url, jobs, managers, batch, tasks)
        if rate > best:
            best, PGQUEUER_BEST[claimers] = rate, label
    return best


# -- driver -----------------------------------------------------------------------------------

Bench = Callable[[str, int, int], Awaitable[float]]


def in_fresh_schema(system: str, bench: Bench) -> Bench:
    """`bench` run on a schema of its own, dropped afterwards."""

    async def run(base_url: str, jobs: int, claimers: int) -> float:
        with Schema(base_url, system) as schema:
            return await bench(schema.url, jobs, claimers)

    return run


# Each takes the base URL (a system makes its own fresh schemas), the job count and K.
SYSTEMS: dict[str, Bench] = {
    "valuerank": in_fresh_schema("valuerank", ours),
    "procrastinate": in_fresh_schema("procrastinate", procrastinate_),
    "pgqueuer": pgqueuer_,
}


async def main_async(base_url: str, jobs: int, claimer_counts: list[int]) -> dict[str, Any]:
    results: dict[str, dict[str, float | str]] = {name: {} for name in SYSTEMS}
    for k in claimer_counts:
        for name, bench in SYSTEMS.items():
            try:
                results[name][str(k)] = round(await bench(base_url, jobs, k), 1)
            except Exception as exc:  # report, do not hide, a peer that could not run
                results[name][str(k)] = f"error: {type(exc).__name__}: {exc}"
    ratio: dict[str, float | None] = {}
    for k in claimer_counts:
        ours_rate = results["valuerank"].get(str(k))
        peers = [
            v
            for n, r in results.items()
            if n != "valuerank"
            for v in [r.get(str(k))]
            if isinstance(v, float)
        ]
        ratio[str(k)] = (
            round(ours_rate / max(peers), 3) if isinstance(ours_rate, float) and peers else None
        )
    with Schema(base_url, "latency") as schema:
        latency = await ours_latency(schema.url, rate=100.0, seconds=5.0, claimers=4)
    return {
        "database": base_url.split("@")[-1],
        "jobs": jobs,
        "claimers": claimer_counts,
        "jobs_per_second": results,
        "ratio_vs_best_peer": ratio,
        "pgqueuer_best_config": {str(k): PGQUEUER_BEST.get(k) for k in claimer_counts},
        "valuerank_enqueue_to_start_latency": latency,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--claimers", default="1,4,16")
    args = parser.parse_args()
    url = os.environ.get("VALUERANK_BENCH_DATABASE_URL", DEFAULT_URL)
    counts = [int(c) for c in args.claimers.split(",")]
    result = asyncio.run(main_async(url, args.jobs, counts))
    print(json.dumps(result, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
