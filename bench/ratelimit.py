"""Rate-limit benchmark: how close do workers get to a provider's RPM without going over?

A fake provider on loopback allows `--rpm` requests per rolling minute (it answers 429 with a
Retry-After when over) and takes `--latency` seconds per request. `--jobs` jobs are run by
`--workers` workers of concurrency `--concurrency` on PostgreSQL (VALUERANK_BENCH_DATABASE_URL,
a fresh schema dropped afterwards), against a bucket configured at the provider's RPM.
Prints one JSON object: achieved requests/minute, the fraction of the requests the provider
allowed that were made (goal >= 0.95), the elapsed time against the fastest possible, 429s.

The default is the issue's run: 20 000 jobs against 6 000 RPM with 50 ms latency. The provider
grants a burst of one minute's requests, then rpm/60 a second, so the limit binds for the last
14 000 jobs and the fastest possible run takes (jobs - rpm) / (rpm / 60) = 140 s.

    python -m bench.ratelimit --json [--jobs 20000 --rpm 6000 --latency 0.05]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import threading
import time
import urllib.error
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import quote

import psycopg

from valuerank.db import create_database
from valuerank.db.migrate import upgrade
from valuerank.orgs import ensure_org
from valuerank.queue import (
    HandlerResult,
    Job,
    JobSpec,
    QueueSettings,
    RateLimited,
    Worker,
    enqueue_many,
)
from valuerank.queue.ratelimit import configure_bucket, reset_from_headers

URL = os.environ.get("VALUERANK_BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")


class FakeProvider:
    """A token bucket like real providers': capacity `rpm`, refilled at rpm/60 per second;
    a request finding it empty gets 429 + Retry-After (the time to the next token)."""

    def __init__(self, rpm: int, latency: float) -> None:
        self.rpm, self.latency = rpm, latency
        self.lock = threading.Lock()
        self.tokens = float(rpm)
        self.at = time.monotonic()
        self.ok = 0
        self.limited = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_GET(self) -> None:
                now = time.monotonic()
                with outer.lock:
                    rate = outer.rpm / 60.0
                    outer.tokens = min(outer.rpm, outer.tokens + (now - outer.at) * rate)
                    outer.at = now
                    if outer.tokens >= 1:
                        outer.tokens -= 1
                        status, retry = 200, 0.0
                        outer.ok += 1
                    else:
                        status, retry = 429, (1 - outer.tokens) / rate
                        outer.limited += 1
                time.sleep(outer.latency)
                self.send_response(status)
                if status == 429:
                    self.send_header("Retry-After", f"{max(retry, 0.05):.3f}")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        ThreadingHTTPServer.request_queue_size = 1024
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"

    def start(self) -> None:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _get(url: str) -> tuple[int, dict[str, str]]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, dict(response.headers)
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    schema = f"vr_bench_{uuid.uuid4().hex[:12]}"
    libpq = "postgresql://" + URL.split("://", 1)[1]
    with psycopg.connect(libpq, autocommit=True) as c:
        c.execute(f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in URL else "?"
    db = create_database(f"{URL}{sep}options={quote(f'-csearch_path={schema}')}")
    provider = FakeProvider(args.rpm, args.latency)
    provider.start()
    try:
        await upgrade(db)
        async with db.transaction() as conn:
            org = await ensure_org(conn, "bench")
            await configure_bucket(conn, "fake", rpm=args.rpm)
            specs = [
                JobSpec(
                    kind="call",
                    org_id=org,
                    partition="bench",
                    item_key=str(i),
                    payload={"i": i},
                    provider="fake",
                )
                for i in range(args.jobs)
            ]
            await enqueue_many(conn, specs)
        loop = asyncio.get_running_loop()
        from concurrent.futures import ThreadPoolExecutor

        loop.set_default_executor(ThreadPoolExecutor(max_workers=args.concurrency * args.workers))
        seen_429 = 0

        async def call(job: Job) -> Any:
            nonlocal seen_429
            status, headers = await asyncio.to_thread(_get, provider.url)
            if status == 429:
                seen_429 += 1
                raise RateLimited(retry_after=reset_from_headers(headers) or 1.0)
            return HandlerResult(None)

        settings = QueueSettings(
            lease_seconds=60, heartbeat_seconds=20, poll_seconds=0.05, reap_interval_seconds=30
        )
        workers = [
            Worker(db, settings=settings, concurrency=args.concurrency, handlers={"call": call})
            for _ in range(args.workers)
        ]
        started = time.monotonic()
        tasks = [asyncio.create_task(w.run_forever()) for w in workers]
        while sum(w.stats.succeeded for w in workers) < args.jobs:
            await asyncio.sleep(0.1)
        elapsed = time.monotonic() - started
        for w in workers:
            w.stop()
        await asyncio.gather(*tasks)
        achieved = provider.ok / elapsed * 60.0
        # The provider allows a burst of `rpm`, then rpm/60 per second: the fastest possible run.
        ideal = max(args.jobs - args.rpm, 0) / (args.rpm / 60.0)
        return {
            "jobs": args.jobs,
            "rpm_limit": args.rpm,
            "latency_s": args.latency,
            "workers": args.workers,
            "concurrency": args.concurrency,
            "elapsed_s": round(elapsed, 2),
            "achieved_rpm": round(achieved, 1),
            # Requests sent / requests the provider allowed in that time (its burst of one
            # minute's requests plus rpm/60 a second): the achieved fraction of R, goal >= 0.95.
            "fraction_of_allowed": round(provider.ok / (args.rpm + args.rpm * elapsed / 60.0), 3),
            "ideal_elapsed_s": round(ideal, 2),
            # Fastest possible run / this run (meaningful when jobs > rpm): the goal is >= 0.95.
            "fraction_of_ideal": round(ideal / elapsed, 3) if ideal else None,
            "server_429s": provider.limited,
            "handler_429s": seen_429,
        }
    finally:
        provider.stop()
        await db.dispose()
        with psycopg.connect(libpq, autocommit=True) as c:
            c.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--rpm", type=int, default=6_000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    result = asyncio.run(run(args))
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
