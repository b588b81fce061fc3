"""Enqueue-to-start latency of `bench.queue` (`ours_latency`, `--only latency`): one job per
transaction at a steady rate to an idle `valuerank worker -c 4`; see `bench.queue`'s doc."""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from typing import Any

from bench.pg import Schema


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


def load_since(before: tuple[float, float, float]) -> dict[str, list[float]]:
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
        "load_average": load_since(load_before),
        "cpus": os.cpu_count(),
    }
