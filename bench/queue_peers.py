"""The peers of `bench.queue`: procrastinate (3.x) and PgQueuer (1.x), each run as its users run
it, over a small grid of configurations for K that includes its defaults.

Each function takes the URL of a fresh schema (see `bench.pg.Schema`), enqueues `jobs` no-op
jobs the peer's own way, then times the drain by a worker that stops once the queue is empty
(procrastinate `wait=False`, PgQueuer `mode=drain`): the time includes writing the last
completions and the worker's exit. `meter` installs the in-flight meter (`bench.pg`) first.
The worker connects to `worker_url`: the same schema, through `bench.latency_proxy` when the
benchmark adds latency (the enqueueing and the meter go direct); its connections are opened
before the timing starts, as they were without the proxy.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import psycopg

from bench.pg import install_in_flight_meter

# (schema URL, jobs, meter, the worker's URL to the same schema) → jobs/s
Run = Callable[[str, int, bool, str], Awaitable[float]]


@dataclass(frozen=True)
class PeerConfig:
    system: str
    label: str
    run: Run


# -- procrastinate ----------------------------------------------------------------------------

# psycopg-pool's default size, which procrastinate's connector keeps unless told otherwise.
PSYCOPG_POOL_DEFAULT = 4


async def procrastinate_run(
    url: str, jobs: int, meter: bool, worker_url: str, *, concurrency: int, pool: int | None
) -> float:
    """One procrastinate worker of `concurrency` sub-workers, everything else at its defaults
    (LISTEN/NOTIFY on, 5 s polling fallback, jobs kept); `pool`: the connection pool's size
    (None: psycopg-pool's default of 4)."""
    import procrastinate

    sizes: dict[str, Any] = {} if pool is None else {"min_size": pool, "max_size": pool}
    done = 0

    def app_on(conninfo: str) -> tuple[procrastinate.App, Any]:
        app = procrastinate.App(
            connector=procrastinate.PsycopgConnector(conninfo=conninfo, **sizes)
        )

        @app.task(name="noop")
        async def noop() -> None:
            nonlocal done
            done += 1

        return app, noop

    app, noop = app_on(url)
    worker_app = app_on(worker_url)[0] if worker_url != url else app
    async with app.open_async(), contextlib.AsyncExitStack() as stack:
        if worker_app is not app:
            await stack.enter_async_context(worker_app.open_async())
        await app.schema_manager.apply_schema_async()
        for start in range(0, jobs, 1000):
            await noop.batch_defer_async(*({} for _ in range(min(1000, jobs - start))))
        if meter:
            install_in_flight_meter(url, "procrastinate_jobs", "doing")
        t = time.perf_counter()
        await worker_app.run_worker_async(
            concurrency=concurrency, wait=False, install_signal_handlers=False
        )
        elapsed = time.perf_counter() - t
    if done != jobs:
        raise RuntimeError(f"procrastinate: {done} of {jobs} jobs done")
    return jobs / elapsed


def procrastinate_configs(k: int) -> list[PeerConfig]:
    """Its defaults (one sub-worker, psycopg-pool's 4 connections), concurrency K with the
    default pool, and concurrency K with a pool sized to K (+2: the LISTEN connection and the
    worker's periodic tasks)."""
    grid = {
        f"defaults (concurrency 1, pool of {PSYCOPG_POOL_DEFAULT})": (1, None),
        f"concurrency {k}, default pool of {PSYCOPG_POOL_DEFAULT}": (k, None),
        f"concurrency {k}, pool of {k + 2}": (k, k + 2),
    }
    configs: list[PeerConfig] = []
    seen: set[tuple[int, int]] = set()
    for label, (concurrency, pool) in grid.items():
        size = pool or PSYCOPG_POOL_DEFAULT
        if (concurrency, size) in seen or size < PSYCOPG_POOL_DEFAULT:
            continue
        seen.add((concurrency, size))
        configs.append(PeerConfig("procrastinate", label, _procrastinate(concurrency, pool)))
    return configs


def _procrastinate(concurrency: int, pool: int | None) -> Run:
    def run(url: str, jobs: int, meter: bool, worker_url: str) -> Awaitable[float]:
        return procrastinate_run(url, jobs, meter, worker_url, concurrency=concurrency, pool=pool)

    return run


# -- PgQueuer ---------------------------------------------------------------------------------


async def pgqueuer_run(
    url: str,
    jobs: int,
    meter: bool,
    worker_url: str,
    *,
    managers: int,
    batch: int | None,
    tasks: int | None,
) -> float:
    """`managers` queue managers, each on its own connection, in drain mode; `batch` and
    `tasks` (max_concurrent_tasks) None: PgQueuer's defaults (batch 10, no cap)."""
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
    if meter:
        install_in_flight_meter(url, "pgqueuer", "picked")
    done = 0
    conns = [
        await psycopg.AsyncConnection.connect(worker_url, autocommit=True) for _ in range(managers)
    ]
    qms = []
    for conn in conns:
        qm = QueueManager(Queries(PsycopgDriver(conn)))

        @qm.entrypoint("noop")
        async def noop(job: Any) -> None:
            nonlocal done
            done += 1

        qms.append(qm)
    options: dict[str, Any] = {"mode": QueueExecutionMode.drain}
    if batch is not None:
        options["batch_size"] = batch
    if tasks is not None:
        options["max_concurrent_tasks"] = tasks
    t = time.perf_counter()
    await asyncio.gather(*(qm.run(**options) for qm in qms))
    elapsed = time.perf_counter() - t
    for conn in [*conns, setup]:
        await conn.close()
    if done != jobs:
        raise RuntimeError(f"pgqueuer: {done} of {jobs} jobs done")
    return jobs / elapsed


def pgqueuer_configs(k: int) -> list[PeerConfig]:
    """Its defaults (one manager, batch 10, no cap on tasks: K does not apply), K managers of
    batch 1, and one manager of batch K/2. PgQueuer needs max_concurrent_tasks >= 2 * batch,
    so a capped manager keeps at least 2 jobs in flight."""
    half = max(1, k // 2)
    grid = {
        "defaults (1 manager, batch 10, no task cap)": (1, None, None),
        f"{k} manager(s), batch 1, max 2 tasks each": (k, 1, 2),
        f"1 manager, batch {half}, max {max(2, k)} tasks": (1, half, max(2, k)),
    }
    seen: set[tuple[int, int | None, int | None]] = set()
    configs = []
    for label, (managers, batch, tasks) in grid.items():
        if (managers, batch, tasks) in seen:
            continue
        seen.add((managers, batch, tasks))
        configs.append(PeerConfig("pgqueuer", label, _pgqueuer(managers, batch, tasks)))
    return configs


def _pgqueuer(managers: int, batch: int | None, tasks: int | None) -> Run:
    def run(url: str, jobs: int, meter: bool, worker_url: str) -> Awaitable[float]:
        return pgqueuer_run(
            url, jobs, meter, worker_url, managers=managers, batch=batch, tasks=tasks
        )

    return run


def quiet_peer_logs() -> None:
    """procrastinate warns that the app lives in __main__; PgQueuer logs every drain."""
    for name in ("procrastinate", "pgqueuer"):
        logging.getLogger(name).setLevel(logging.ERROR)


def peer_configs(k: int) -> list[PeerConfig]:
    return [*procrastinate_configs(k), *pgqueuer_configs(k)]
