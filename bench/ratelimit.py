"""Rate-limit benchmark: how much of a provider's rolling-window RPM do separate worker
processes use, without failing jobs, when the limit is configured and when it is not known?

The provider (`bench.fake_provider`, on loopback, in this process) allows R = `--rpm` requests
in any rolling `--window` seconds (a sliding log of request times; a 429 with `retry-after` and
OpenAI's `x-ratelimit-*` headers when over) and answers allowed requests in `--latency` s.
`--workers` worker processes (spawned; each the real `Worker`, with `valuerank worker`'s
settings: VALUERANK_WORKER_*, defaults here) of concurrency `--concurrency` run jobs whose
handler POSTs to it and turns a failed response into the queue's error the way the pipeline
does (`classify_status`, `as_job_error`): a 429 is `RateLimited` after the wait the headers
name (`retry-after` first). On PostgreSQL (VALUERANK_BENCH_DATABASE_URL), a fresh schema per mode.

Modes:
- `known`: the queue's bucket for the provider is set to R requests a minute beforehand
  (`valuerank queue limits set fake --rpm R`);
- `unknown`: no limit is configured: the queue only learns from the 429s and their headers.

Each mode runs for `--windows` whole windows from the provider's first request, with more jobs
queued than the provider can allow in that time; then the workers get SIGTERM and drain.
`fraction_of_allowed` is how full the queue kept the provider's window once it had filled:
the mean, over the run after its first window (sampled every 50 ms), of the requests allowed
in the preceding `window` seconds over R. 1.0: each place that freed in the window was taken
again at once, R per window sustained; a queue that resumes d seconds late after each block
scores about 1 - d / window. (The first window measures how fast the workers can go, not the
limit.) Goal: ≥ 0.95 with no failed job. 429s are reported as the provider counted them and
as the queue recorded them (rate-limited retries, which spend no attempt).

What differs from production: the handler is the benchmark's (a POST with a minimal
keep-alive HTTP/1.1 client, `LoopbackClient`: httpx's pool bookkeeping costs more CPU than
the rest of a job on a 2-core machine, and the benchmark is about the queue), not the
pipeline's probe with an SDK; the error mapping is the pipeline's.

`--followups N`: each job makes 1 + N calls, as a probe with N follow-up turns does; the calls
after the first reserve their own request from the bucket first (`queue.call_reserve`, what the
probe does), so the limit counts calls, not jobs. `calls_per_minute` and `peak_calls_per_window`
(calls the provider received, 429s included, in the busiest window) are reported against it.

    python -m bench.ratelimit --json [--rpm 6000 --windows 2 --modes known,unknown]
                                     [--followups 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import signal
import sys
import time
from typing import Any

from bench.fake_provider import FakeProvider, LoopbackClient
from bench.pg import DEFAULT_URL, Schema

PROVIDER = "fake"
MODEL = "fake-model"
KIND = "call"


# -- the worker processes -----------------------------------------------------------------------


def worker_process(url: str, provider_url: str, concurrency: int, followups: int = 0) -> None:
    """A worker process: runs `call` jobs until SIGTERM, then drains and exits."""
    asyncio.run(_worker_main(url, provider_url, concurrency, followups))


async def _worker_main(url: str, provider_url: str, concurrency: int, followups: int) -> None:
    from valuerank.cli.worker_settings import worker_settings
    from valuerank.db import create_database
    from valuerank.pipeline.calls import as_job_error
    from valuerank.providers.classify import classify_status
    from valuerank.queue import Job, Worker
    from valuerank.queue.call_reserve import reserve_request

    db = create_database(url)
    client = LoopbackClient(provider_url, concurrency)

    async def call(job: Job) -> None:
        request = {"model": job.model, "messages": [{"role": "user", "content": "hi"}]}
        for turn in range(1 + followups):
            if turn:  # the claim reserved the first call; each follow-up reserves its own
                await reserve_request(db, provider=job.provider, model=job.model)
            status, headers, body = await client.post(json.dumps(request).encode())
            if status >= 400:
                error = classify_status(status, body.decode(), headers, provider=PROVIDER)
                raise as_job_error(error)

    ws = worker_settings()
    worker = Worker(
        db, settings=ws.queue_settings(), concurrency=concurrency, handlers={KIND: call}
    )
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, worker.stop)
    try:
        await worker.run_forever()
    finally:
        await client.aclose()
        await db.dispose()


# -- one mode -------------------------------------------------------------------------------------


async def _prepare(url: str, mode: str, args: argparse.Namespace) -> None:
    from valuerank.db import create_database
    from valuerank.db.migrate import upgrade
    from valuerank.orgs import ensure_org
    from valuerank.queue import JobSpec, enqueue_many
    from valuerank.queue.ratelimit import configure_bucket

    db = create_database(url)
    try:
        await upgrade(db)
        jobs = args.windows * args.rpm // (1 + args.followups)
        jobs += 2 * args.workers * args.concurrency + 1000
        async with db.transaction() as conn:
            org = await ensure_org(conn, "bench")
            if mode == "known":
                # R per window, as a rate per minute (the bucket's unit).
                await configure_bucket(conn, PROVIDER, rpm=args.rpm * 60.0 / args.window)
            for start in range(0, jobs, 5000):
                specs = [
                    JobSpec(
                        kind=KIND,
                        org_id=org,
                        partition="bench",
                        item_key=str(i),
                        payload={"i": i},
                        provider=PROVIDER,
                        model=MODEL,
                    )
                    for i in range(start, min(jobs, start + 5000))
                ]
                await enqueue_many(conn, specs)
    finally:
        await db.dispose()


async def _outcome(url: str) -> dict[str, Any]:
    from sqlalchemy import func, select

    from valuerank.db import create_database
    from valuerank.db.tables import job_errors, jobs
    from valuerank.queue.ratelimit import list_buckets

    db = create_database(url)
    try:
        async with db.transaction() as conn:
            statuses = dict(
                (await conn.execute(select(jobs.c.status, func.count()).group_by(jobs.c.status)))
                .tuples()
                .all()
            )
            errors = dict(
                (
                    await conn.execute(
                        select(job_errors.c.category, func.count()).group_by(job_errors.c.category)
                    )
                )
                .tuples()
                .all()
            )
            buckets = [
                {
                    "key": b.key,
                    "rpm_limit": b.rpm_limit,
                    "rate_limited_total": b.rate_limited_total,
                }
                for b in await list_buckets(conn)
            ]
        return {"jobs_by_status": statuses, "errors_by_category": errors, "buckets": buckets}
    finally:
        await db.dispose()


async def run_mode(base_url: str, mode: str, args: argparse.Namespace) -> dict[str, Any]:
    with Schema(base_url, f"ratelimit_{mode}") as schema:
        await _prepare(schema.url, mode, args)
        provider = FakeProvider(args.rpm, args.window, args.latency)
        await provider.start()
        ctx = multiprocessing.get_context("spawn")
        procs = [
            ctx.Process(
                target=worker_process,
                args=(schema.url, provider.url, args.concurrency, args.followups),
                name=f"bench-ratelimit-worker-{i}",
            )
            for i in range(args.workers)
        ]
        for p in procs:
            p.start()
        try:
            deadline = time.monotonic() + 120
            while provider.first_request is None:
                if time.monotonic() > deadline or not all(p.is_alive() for p in procs):
                    raise RuntimeError("the workers made no request (did they start?)")
                await asyncio.sleep(0.01)
            t0 = provider.first_request
            span = args.windows * args.window
            await asyncio.sleep(max(0.0, t0 + span - time.monotonic()))
        finally:
            for p in procs:
                if p.pid is not None and p.is_alive():
                    os.kill(p.pid, signal.SIGTERM)
            await asyncio.gather(*(asyncio.to_thread(p.join, 90) for p in procs))
            await provider.stop()
        codes = [p.exitcode for p in procs]
        if any(code != 0 for code in codes):
            raise RuntimeError(f"worker processes exited with {codes}")
        allowed = provider.allowed_between(t0, t0 + span)
        most = args.windows * args.rpm
        outcome = await _outcome(schema.url)
        failed = outcome["jobs_by_status"].get("failed", 0)
        fraction = provider.window_use(t0 + args.window, t0 + span)
        return {
            "mode": mode,
            "seconds": span,
            "fraction_of_allowed": round(fraction, 3),
            "allowed_requests": allowed,
            "most_allowed": most,
            "allowed_per_window": [
                provider.allowed_between(t0 + i * args.window, t0 + (i + 1) * args.window)
                for i in range(args.windows)
            ],
            # Allowed requests (and 429s) per 5 s of the run, for a timeline.
            "allowed_per_5s": [
                provider.allowed_between(t0 + t, t0 + t + 5) for t in range(0, int(span), 5)
            ],
            "429s_per_5s": [
                provider.refused_between(t0 + t, t0 + t + 5) for t in range(0, int(span), 5)
            ],
            "server_429s": provider.refused_between(t0, t0 + span),
            "calls_per_job": 1 + args.followups,
            # Calls the provider received (429s included), against its limit of R a window.
            "calls_per_minute": round(
                (provider.allowed_between(t0, t0 + span) + provider.refused_between(t0, t0 + span))
                * 60.0
                / span,
                1,
            ),
            "rpm_limit_per_minute": round(args.rpm * 60.0 / args.window, 1),
            "peak_calls_per_window": provider.peak_calls(t0, t0 + span),
            "rate_limited_retries": outcome["errors_by_category"].get("rate_limited", 0),
            "failed_jobs": failed,
            "goal_met": fraction >= 0.95 and failed == 0,
            **outcome,
        }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    base_url = os.environ.get("VALUERANK_BENCH_DATABASE_URL", DEFAULT_URL)
    load_before = os.getloadavg()
    modes = {}
    for mode in args.modes.split(","):
        modes[mode] = await run_mode(base_url, mode, args)
        print(f"{mode}: {modes[mode]['fraction_of_allowed']}", file=sys.stderr)
    return {
        "rpm_limit": args.rpm,
        "window_s": args.window,
        "windows": args.windows,
        "latency_s": args.latency,
        "workers": args.workers,
        "concurrency": args.concurrency,
        "followups": args.followups,
        "fraction_of_allowed": {m: r["fraction_of_allowed"] for m, r in modes.items()},
        "modes": modes,
        "load_average": {
            "before": [round(x, 2) for x in load_before],
            "after": [round(x, 2) for x in os.getloadavg()],
        },
        "cpus": os.cpu_count(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rpm", type=int, default=6_000, help="requests allowed per window")
    parser.add_argument("--window", type=float, default=60.0, help="the window, in seconds")
    parser.add_argument("--windows", type=int, default=2, help="windows each mode runs")
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--concurrency", type=int, default=32, help="per worker process")
    parser.add_argument("--modes", default="known,unknown")
    parser.add_argument(
        "--followups", type=int, default=0, help="follow-up calls per job (a probe's turns)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    result = asyncio.run(main_async(args))
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
