"""Validation API benchmark: p50/p95 latency and requests/s of the multi-model view and the task
consensus summary under concurrent load, cached and uncached, on PostgreSQL.

The data (`--tasks` tasks of `--tags` RA tags, each validated by `--models` scripted models) is
written through the services into a fresh schema of VALUERANK_BENCH_DATABASE_URL (dropped
afterwards). The server is `valuerank serve --no-work --no-access-log --workers N` in a child
process, for each N of `--serve-workers`; a second one runs with
VALUERANK_VALIDATION_CACHE_SECONDS=0 for the uncached figures. `--clients` concurrent clients
(aiohttp on uvloop, keep-alive, one connection each) request random tags or tasks for
`--seconds` per measurement; latency is measured by the clients, and the server's CPU time per
request is read from /proc (what a request costs the server's processes, whatever else shares
the machine). The load generator shares the machine's cores with the server and PostgreSQL, so
it is kept light: aiohttp costs it about 0.25 ms of CPU a request where httpx costs 1 ms
(measured here), and its own CPU per request is reported (`client_cpu_ms_per_request`). These
closed loops find the throughput: each client sends its next request when the last one answers,
so with many clients the latency is mostly the queue for the CPU. `--rates` then measures
latency at a given load, open loop (as wrk2 does): requests are sent at a fixed rate (Poisson
arrivals, seeded) whether or not earlier ones have answered, over as many connections as are
needed at once (`max_in_flight`), and each latency counts from the moment its request was due —
a server that falls behind is charged for it. Goals: p95 < 10 ms cached, < 50 ms uncached;
`p95_to_goal` is p95 / goal (<= 1 meets it).

    python -m bench.validation_api --json [--clients 1 4 16 64 --rates 50 100 200 --seconds 5]
                                          [--serve-workers 1 2]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import itertools
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from typing import Any

import aiohttp
import uvloop

from bench.pg import Schema
from bench.server import start_server
from valuerank.accounts import Role, add_member, create_token
from valuerank.accounts.hashing import new_api_token
from valuerank.db import create_database
from valuerank.db.migrate import upgrade
from valuerank.orgs import ensure_org
from valuerank.validation.store import NewValidation, add_tag, create_task, record_validation

URL = os.environ.get("VALUERANK_BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
TOKEN = new_api_token()  # of an admin the seeding makes
GOALS_MS = {"cached": 10.0, "uncached": 50.0}
KEEP_ALIVE_SECONDS = 3.0  # reuse a free connection only this long (uvicorn keeps 5 s)
PREOPENED = 32  # open-loop connections ready before the clock starts
PERSONAS = ("utilitarian", "deontologist", "contrarian", "centrist", "agreeable", "neutral")
OUTCOMES = ("validated", "partial", "rejected")


async def _seed(url: str, args: argparse.Namespace) -> list[tuple[int, str]]:
    db = create_database(url)
    try:
        await upgrade(db)
        rng = random.Random(7)
        tags: list[tuple[int, str]] = []
        async with db.transaction() as conn:
            org = await ensure_org(conn, "default")
            admin = await add_member(conn, org, "bench@example.test", Role.ADMIN)
            await create_token(conn, org, admin.user.id, name="bench", token=TOKEN)
            for t in range(args.tasks):
                task = await create_task(conn, org, f"Task {t}")
                for g in range(args.tags):
                    tag, _ = await add_tag(
                        conn, org, task.id, f"#COMPLETION_DRIVE_IMPL: assumption {t}.{g}"
                    )
                    tags.append((task.id, tag.id))
                    for persona in PERSONAS[: args.models]:
                        vote = NewValidation(
                            f"scripted:{persona}", rng.choice(OUTCOMES), rng.randint(50, 99)
                        )
                        await record_validation(conn, org, task.id, tag.id, vote)
        return tags
    finally:
        await db.dispose()


def _start(url: str, cache_seconds: float, workers: int) -> tuple[subprocess.Popen[bytes], str]:
    """`valuerank serve --workers N` without the access log (a line per request would be
    measured); its banner goes to stderr, away from --json's output."""
    env = {
        **os.environ,
        "VALUERANK_DATABASE_URL": url,
        "VALUERANK_VALIDATION_CACHE_SECONDS": str(cache_seconds),
        # Per-client rate limits (50 multi-model requests a minute by default) would answer
        # 429 within a second: the benchmark measures the reads, not the limiter.
        "VALUERANK_RATE_LIMITS_ENABLED": "false",
    }
    return start_server(
        lambda port: [
            sys.executable, "-m", "valuerank", "serve", "--port", str(port), "--no-work",
            "--no-access-log", "--workers", str(workers),
        ],
        env,
        timeout=300,  # N processes import the web stack at once, on a shared machine
        stdout_to_stderr=True,
    )  # fmt: skip


def _percentile(values: list[float], q: int) -> float:
    return (
        statistics.quantiles(values, n=100, method="inclusive")[q - 1]
        if len(values) > 1
        else values[0]
    )


def _stat(pid: int) -> list[str]:
    """The fields of /proc/<pid>/stat after the command's name (state, ppid, …)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and its children so far (Linux /proc): with
    `--workers N` the server is the children, the parent only watches them."""
    total = 0.0
    for one in (pid, *_children(pid)):
        fields = _stat(one)
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _children(pid: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if int(_stat(int(name))[1]) == pid:
                    found.append(int(name))
            except (OSError, IndexError):  # it ended meanwhile
                continue
    return found


def _client(base: str) -> aiohttp.ClientSession:
    """One simulated client: one keep-alive connection."""
    one = aiohttp.TCPConnector(limit=1, keepalive_timeout=KEEP_ALIVE_SECONDS)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    timeout = aiohttp.ClientTimeout(total=60)
    return aiohttp.ClientSession(base, headers=headers, connector=one, timeout=timeout)


async def _get(client: aiohttp.ClientSession, path: str) -> tuple[int, bytes]:
    async with client.get(path) as response:
        return response.status, await response.read()


def _wrong_answer(path: str, answer: tuple[int, bytes], cached: bool) -> str | None:
    """Why an answer is not the one measured (an error, or a cache hit where none is due)."""
    status, body = answer
    marker = b'"cached":true}' if cached else b'"cached":false}'
    if status == 200 and body.endswith(marker):
        return None
    return f"{path}: {status} {body[:200]!r}"


async def _warm(clients: list[aiohttp.ClientSession], paths: list[str], cached: bool) -> None:
    """Connect every client; cached, have every client ask every path once: each server
    process has its own cache, and a keep-alive connection stays with one process, so every
    process any client reaches has every entry."""

    async def ask(client: aiohttp.ClientSession) -> None:
        for path in paths if cached else paths[:1]:
            assert (await _get(client, path))[0] == 200

    await asyncio.gather(*(ask(c) for c in clients))


def _figures(
    latencies: list[float],
    wrong: list[str],
    elapsed: float,
    cpu: tuple[float, float],
    cached: bool,
) -> dict[str, Any]:
    """Percentiles, throughput, and the CPU per request of the server and of the load
    generator (`cpu`: seconds of each over the measurement) of one measurement."""
    if wrong:
        raise RuntimeError(f"{len(wrong)} unexpected answers, e.g. {wrong[0]}")
    ms = [x * 1000 for x in latencies]
    goal = GOALS_MS["cached" if cached else "uncached"]
    p95 = _percentile(ms, 95)
    return {
        "requests": len(ms),
        "requests_per_s": round(len(ms) / elapsed, 1),
        "p50_ms": round(_percentile(ms, 50), 2),
        "p95_ms": round(p95, 2),
        "goal_p95_ms": goal,
        "p95_to_goal": round(p95 / goal, 2),
        # The server's own CPU per request: what the figures would be on an idle core.
        "server_cpu_ms_per_request": round(cpu[0] * 1000 / len(ms), 3),
        "client_cpu_ms_per_request": round(cpu[1] * 1000 / len(ms), 3),
    }


def _cpu(server_pid: int) -> tuple[float, float]:
    """CPU seconds so far of the server and of this process (the load generator)."""
    return _cpu_seconds(server_pid), time.process_time()


def _spent(server_pid: int, since: tuple[float, float]) -> tuple[float, float]:
    now = _cpu(server_pid)
    return now[0] - since[0], now[1] - since[1]


async def _load(
    base: str, server_pid: int, paths: list[str], clients: int, seconds: float, cached: bool
) -> dict[str, Any]:
    """Closed loop: each of `clients` sends its next request when the last one answers."""
    latencies: list[float] = []
    wrong: list[str] = []
    sessions = [_client(base) for _ in range(clients)]
    try:
        await _warm(sessions, paths, cached)

        async def client_loop(client: aiohttp.ClientSession, seed: int, stop: float) -> None:
            rng = random.Random(seed)
            while time.perf_counter() < stop:
                path = rng.choice(paths)
                started = time.perf_counter()
                answer = await _get(client, path)
                latencies.append(time.perf_counter() - started)
                if why := _wrong_answer(path, answer, cached):
                    wrong.append(why)

        before = _cpu(server_pid)
        started = time.perf_counter()
        stop = started + seconds
        await asyncio.gather(*(client_loop(c, i, stop) for i, c in enumerate(sessions)))
        elapsed = time.perf_counter() - started
        cpu = _spent(server_pid, before)
    finally:
        await asyncio.gather(*(c.close() for c in sessions))
    return {"clients": clients, **_figures(latencies, wrong, elapsed, cpu, cached)}


async def _open_loop(
    base: str, server_pid: int, paths: list[str], rate: float, seconds: float, cached: bool
) -> dict[str, Any]:
    """Requests due at Poisson arrivals of `rate` a second for `seconds`; latency from when
    each was due. Connections are opened as needed and reused when free."""
    # Free connections, oldest-used first (each stays warm), and when each was last used: one
    # idle longer than the server's keep-alive (uvicorn: 5 s) may be closed under the request,
    # so it is not reused. Opening one costs the load generator a connection set-up, so
    # PREOPENED are connected before the clock starts.
    idle: collections.deque[tuple[aiohttp.ClientSession, float]] = collections.deque()
    opened = [_client(base) for _ in range(PREOPENED)]
    latencies: list[float] = []
    wrong: list[str] = []
    retried: list[str] = []
    in_flight = 0
    most_in_flight = 0
    rng = random.Random(7)

    def fresh() -> aiohttp.ClientSession:
        opened.append(_client(base))
        return opened[-1]

    async def one_request(path: str, due: float) -> None:
        nonlocal in_flight, most_in_flight
        in_flight += 1
        most_in_flight = max(most_in_flight, in_flight)
        while idle and time.perf_counter() - idle[0][1] > KEEP_ALIVE_SECONDS:
            idle.popleft()  # stale: left for aclose at the end
        client = idle.popleft()[0] if idle else fresh()
        try:
            try:
                answer = await _get(client, path)
            except aiohttp.ServerDisconnectedError:  # a keep-alive connection the server closed
                retried.append(path)  # as browsers and urllib3 do for a GET: once, anew
                client = fresh()
                answer = await _get(client, path)
            latencies.append(time.perf_counter() - due)
            if why := _wrong_answer(path, answer, cached):
                wrong.append(why)
        finally:
            idle.append((client, time.perf_counter()))
            in_flight -= 1

    try:
        await _warm(opened, paths, cached)
        idle.extend((c, time.perf_counter()) for c in opened)
        tasks: list[asyncio.Task[None]] = []
        before = _cpu(server_pid)
        started = time.perf_counter()
        due = started
        while due < started + seconds:
            due += rng.expovariate(rate)
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one_request(rng.choice(paths), due)))
        await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - started
        cpu = _spent(server_pid, before)
    finally:
        await asyncio.gather(*(c.close() for c in opened))
    return {
        "rate_per_s": rate,
        "max_in_flight": most_in_flight,
        "retried_on_a_closed_connection": len(retried),
        **_figures(latencies, wrong, elapsed, cpu, cached),
    }


def _progress(row: dict[str, Any]) -> None:
    """Each measurement on stderr as it is made: a long run that fails later keeps them."""
    print(json.dumps(row), file=sys.stderr, flush=True)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    with Schema(URL, "validation") as schema:
        return await _run(schema.url, args)


async def _run(url: str, args: argparse.Namespace) -> dict[str, Any]:
    children: list[subprocess.Popen[bytes]] = []
    try:
        tags = await _seed(url, args)
        views = [f"/api/assumptions/multi-model/{t}/{g}" for t, g in tags]
        summaries = sorted({f"/api/assumptions/consensus/{t}" for t, _ in tags})
        results: list[dict[str, Any]] = []
        open_loop: list[dict[str, Any]] = []
        for workers, (mode, cache_seconds) in itertools.product(
            args.serve_workers,
            [m for m in (("cached", 300.0), ("uncached", 0.0)) if m[0] in args.modes],
        ):
            child, base = _start(url, cache_seconds, workers)
            children.append(child)
            cached = mode == "cached"
            for endpoint, paths in (("multi_model_view", views), ("task_consensus", summaries)):
                row = {"endpoint": endpoint, "mode": mode, "serve_workers": workers}
                for clients in args.clients:
                    figures = await _load(base, child.pid, paths, clients, args.seconds, cached)
                    results.append({**row, **figures})
                    _progress(results[-1])
                for rate in args.rates:
                    figures = await _open_loop(base, child.pid, paths, rate, args.seconds, cached)
                    open_loop.append({**row, **figures})
                    _progress(open_loop[-1])
            child.terminate()
            child.wait(timeout=60)
        return {
            "database": "postgresql",
            "load_average_1m_at_end": round(os.getloadavg()[0], 2),
            "cpus": os.cpu_count(),
            "tasks": args.tasks,
            "tags_per_task": args.tags,
            "validations_per_tag": args.models,
            "seconds_per_measurement": args.seconds,
            "results": results,
            "open_loop": open_loop,
        }
    finally:
        for child in children:
            if child.poll() is None:
                child.terminate()  # `serve --workers` stops its processes, then itself
                try:
                    child.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    child.kill()  # its processes see their parent gone and stop
                    child.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--tags", type=int, default=5)
    parser.add_argument("--models", type=int, default=4, choices=range(1, len(PERSONAS) + 1))
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16, 64])
    parser.add_argument(
        "--rates", type=float, nargs="*", default=[50, 100, 200], help="open-loop requests/s"
    )
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument(
        "--modes", nargs="+", default=["cached", "uncached"], choices=["cached", "uncached"]
    )
    parser.add_argument(
        "--serve-workers",
        type=int,
        nargs="+",
        default=[1],
        help="measure with each of these `valuerank serve --workers` counts",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    # SIGTERM (a `timeout`) unwinds like Ctrl+C: the servers are stopped, the schema dropped.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        result = runner.run(run(args))
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for r in result["results"]:
        print(
            f"{r['endpoint']:<17} {r['mode']:<8} workers={r['serve_workers']} "
            f"clients={r['clients']:<3} "
            f"p50={r['p50_ms']:.2f} ms p95={r['p95_ms']:.2f} ms ({r['p95_to_goal']}× goal) "
            f"{r['requests_per_s']:.0f} req/s, server {r['server_cpu_ms_per_request']} ms CPU/req"
        )
    for r in result["open_loop"]:
        print(
            f"{r['endpoint']:<17} {r['mode']:<8} workers={r['serve_workers']} "
            f"at {r['rate_per_s']:g}/s "
            f"p50={r['p50_ms']:.2f} ms p95={r['p95_ms']:.2f} ms ({r['p95_to_goal']}× goal), "
            f"at most {r['max_in_flight']} in flight, server {r['server_cpu_ms_per_request']} "
            f"ms CPU/req, load generator {r['client_cpu_ms_per_request']} ms CPU/req"
        )


if __name__ == "__main__":
    main()
