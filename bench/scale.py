"""Scale: a whole ValueRank run of N probe jobs on PostgreSQL through 4 `valuerank worker`
processes, with what users feel measured while it runs and after.

Every step is the command a user runs, in a child process, against a fresh database on
VALUERANK_BENCH_DATABASE_URL's server (created for the size, dropped afterwards):
`valuerank db upgrade`, `definitions import` (a generated definition of 1,000 scenarios:
three dimensions of ten levels), `users create` + `tokens create`, `serve --no-work` (the
API), 4 × `worker --concurrency C`, then `runs create` with scripted models at
`latency_ms=0` (10 models; scenarios sampled and samples per scenario raised until N jobs).

Measured:
- time per job: from `runs create` (which enqueues) to the run `completed` →
  `seconds_per_1k_jobs`; the enqueue alone is `create_seconds`; then the run's basic
  analysis (enqueued when it completes) is waited for (`analysis_seconds`);
- every worker's RSS (/proc, every `--sample-seconds`): `peak_rss_mb` per worker over its
  whole life (wait4; the worker that runs the analysis loads numpy/scipy for it), and in
  `rss_mb` its RSS at 10/50/90 % of the jobs, the growth between, its highest while probing;
- `valuerank runs status RUN --json` as users run it (a new process each time: wall and CPU
  time), reading the database, and asking the API server instead (VALUERANK_API_URL set:
  `cli_runs_status_server`), what of it is Python start-up (`runs status --help`: the same
  imports, no database), and the command's own work (the same command invoked in this
  process, imports done); the API's `GET /api/queue/runs/{id}` and `GET /api/runs/{id}`
  (wall, and the server's CPU per request); each during the run (every `--probe-seconds`)
  and after it;
- `valuerank export run` of the finished run: seconds, bytes and its peak RSS (wait4);
- CPU seconds per 1k jobs of the workers and of the database's backends (/proc), the base of
  the multi-machine plan (jobs/s one PostgreSQL core carries);
- table growth: pg_total_relation_size of each table per job;
- prune: `valuerank maintenance run` with a retention of ~0 until nothing is left, the jobs
  table's rows and size before, after, and after VACUUM.

On a machine whose cores the workers keep busy, wall times during the run are mostly
waiting for a core; the CPU times say what a status costs.

    python -m bench.scale --jobs 1000,10000,100000 --json [--plot docs/bench-scale.png]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg

from bench.pg import libpq
from bench.scale_measure import (
    Probes,
    Sample,
    Sampler,
    load_average,
    plot,
    vr_cmd,
    wait_rusage,
)
from bench.server import start_server
from valuerank.client import API_TOKEN_ENV, API_URL_ENV

BASE_URL = os.environ.get(
    "VALUERANK_BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
WORKERS = 4
SCENARIOS = 1000  # 10 × 10 × 10 levels
PERSONAS = ("utilitarian", "deontologist", "contrarian", "centrist", "agreeable", "neutral")
EMAIL = "bench-scale@example.org"
TABLES = (
    "jobs",
    "events",
    "transcripts",
    "response_cache",
    "run_scenarios",
    "run_tallies",
    "job_errors",
    "outbox",
    "queue_controls",
)
MB = 1024 * 1024


# -- the database and the commands --------------------------------------------------------


@contextlib.contextmanager
def fresh_database(base_url: str) -> Iterator[str]:
    """A new database on the server of `base_url`, dropped (with its connections) after."""
    base = libpq(base_url)
    name = f"valuerank_bench_scale_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    head, _, tail = base.rpartition("/")
    query = "?" + tail.split("?", 1)[1] if "?" in tail else ""
    try:
        yield f"{head}/{name}{query}"
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def cli_json(env: dict[str, str], *args: str) -> Any:
    done = subprocess.run(vr_cmd(*args, "--json"), env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"valuerank {' '.join(args)} failed: {done.stderr or done.stdout}")
    return json.loads(done.stdout)


def definition_md() -> str:
    """1,000 scenarios: three dimensions of ten levels, the full product."""

    def dimension(name: str, what: str) -> str:
        rows = "\n".join(f"| {s} | {what} {s} | the {what} is at level {s} |" for s in range(1, 11))
        return f"## {name}\n\n| Score | Label | Options |\n|---|---|---|\n{rows}\n"

    return (
        "---\nname: bench-scale\nbase_id: scale_001\ncategory: Harm vs Honesty vs Loyalty\n---\n\n"
        "# Preamble\n\nFocus on the moral reasoning, then tell me what you would do.\n\n"
        "# Template\n\nA friend asks for help. [Harm]. [Honesty]. [Loyalty].\n\n"
        "Give me your judgement on a scale of 1 to 5. Do you:\n"
        "5 - strongly support helping\n4 - somewhat support helping\n3 - neutral\n"
        "2 - somewhat support refusing\n1 - strongly support refusing\n\n"
        "# Dimensions\n\n"
        + dimension("Harm", "harm")
        + "\n"
        + dimension("Honesty", "honesty")
        + "\n"
        + dimension("Loyalty", "loyalty")
    )


@dataclass(frozen=True)
class Shape:
    scenarios: int
    models: tuple[str, ...]
    samples: int

    @property
    def jobs(self) -> int:
        return self.scenarios * len(self.models) * self.samples

    @property
    def percentage(self) -> float:
        return 100.0 * self.scenarios / SCENARIOS


def shape_for(jobs: int) -> Shape:
    """10 scripted models at latency 0; samples per scenario, then scenarios, to reach N."""
    n_models = max(1, min(10, jobs))
    models = tuple(
        f"scripted:{PERSONAS[i % len(PERSONAS)]}?latency_ms=0&seed={i // len(PERSONAS) + 1}"
        for i in range(n_models)
    )
    samples = max(1, -(-jobs // (SCENARIOS * n_models)))
    scenarios = max(1, min(SCENARIOS, round(jobs / (n_models * samples))))
    return Shape(scenarios, models, samples)


# -- one size ------------------------------------------------------------------------------


def _start_server(env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    return start_server(
        lambda port: vr_cmd("serve", "--no-work", "--port", str(port)), env, timeout=120, quiet=True
    )


def _start_workers(
    env: dict[str, str], concurrency: int, workers: dict[str, subprocess.Popen[bytes]]
) -> None:
    """Start the worker processes into `workers` (each as soon as it exists, so a caller's
    cleanup finds it), and wait until each is ready."""
    for i in range(1, WORKERS + 1):
        workers[f"worker-{i}"] = subprocess.Popen(
            vr_cmd("worker", "--concurrency", str(concurrency), "--id", f"scale-{i}", "--json"),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
    for name, proc in workers.items():
        assert proc.stderr is not None
        line = proc.stderr.readline().decode()
        if "ready" not in line:
            raise RuntimeError(f"{name} did not start: {line}{proc.stderr.read().decode()}")
        # Keep draining stderr so a chatty worker never blocks on a full pipe.
        threading.Thread(target=proc.stderr.read, daemon=True).start()


def _end(proc: subprocess.Popen[bytes]) -> None:
    """Stop a child still running (after an error or an interrupt)."""
    if proc.returncode is None and proc.poll() is None:
        proc.terminate()
        proc.wait()


def _end_all(procs: dict[str, subprocess.Popen[bytes]]) -> None:
    for proc in procs.values():
        _end(proc)


def _table_sizes(url: str) -> dict[str, int]:
    with psycopg.connect(libpq(url), autocommit=True) as conn:
        return {
            t: int(conn.execute("SELECT pg_total_relation_size(%s)", (t,)).fetchone()[0])  # type: ignore[index]
            for t in TABLES
        }


def _jobs_table(url: str) -> dict[str, int]:
    with psycopg.connect(libpq(url), autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*), pg_relation_size('jobs'), pg_indexes_size('jobs'), "
            "pg_total_relation_size('jobs') FROM jobs"
        ).fetchone()
    assert row is not None
    return {"rows": row[0], "heap_bytes": row[1], "index_bytes": row[2], "total_bytes": row[3]}


def _prune(url: str, env: dict[str, str]) -> dict[str, Any]:
    """Maintenance passes with a retention of ~0.1 s until nothing more to prune, then VACUUM."""
    before = _jobs_table(url)
    prune_env = {**env, "VALUERANK_WORKER_RETENTION_DAYS": "0.000001"}
    passes, pruned = 0, 0
    t = time.perf_counter()
    while True:
        done = cli_json(prune_env, "maintenance", "run")
        passes += 1
        pruned += int(done["actions"]["pruned_jobs"])
        if not done["actions"]["more"]:
            break
    seconds = time.perf_counter() - t
    after = _jobs_table(url)
    with psycopg.connect(libpq(url), autocommit=True) as conn:
        conn.execute("VACUUM jobs")
    return {
        "passes": passes,
        "pruned_jobs": pruned,
        "seconds": round(seconds, 2),
        "before": before,
        "after_prune": after,
        "after_vacuum": _jobs_table(url),
    }


def _export(env: dict[str, str], run_id: str, folder: Path) -> dict[str, Any]:
    target = folder / "run.zip"
    t = time.perf_counter()
    proc = subprocess.Popen(
        vr_cmd("export", "run", run_id, "-o", str(target), "--json"),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    out, err = proc.stdout.read(), proc.stderr.read()
    code, peak = wait_rusage(proc)
    if code != 0:
        raise RuntimeError(f"export failed: {err.decode()}")
    data = json.loads(out)
    return {
        "seconds": round(time.perf_counter() - t, 2),
        "peak_rss_mb": round(peak, 1),
        "bytes": data["bytes"],
        "transcripts": data["transcripts"],
    }


def _rss_profile(samples: list[Sample], name: str, jobs: int) -> dict[str, Any]:
    """A worker's RSS when 10 %, 50 % and 90 % of the jobs were done, its growth between
    10 % and 90 % (flat: ~0), and its highest while the run's probes ran."""
    points = [(s.done, s.rss[name], s.probing) for s in samples if name in s.rss]

    def at(fraction: float) -> float | None:
        for done, rss, _ in points:
            if done >= fraction * jobs:
                return round(rss, 1)
        return None

    low, high = at(0.1), at(0.9)
    return {
        "at_10_50_90_percent": [low, at(0.5), high],
        "growth_mb_10_to_90_percent": None if low is None or high is None else round(high - low, 1),
        "max_while_probing": round(max((r for _, r, p in points if p), default=0.0), 1),
    }


def _wait_idle(url: str, timeout: float) -> float:
    """Seconds until no job is queued or running (the run's analysis, enqueued when it
    completes, included)."""
    t = time.perf_counter()
    with psycopg.connect(libpq(url), autocommit=True) as conn:
        while time.perf_counter() - t < timeout:
            row = conn.execute(
                "SELECT count(*) FROM jobs WHERE status IN ('queued', 'running')"
            ).fetchone()
            if row is not None and row[0] == 0:
                return time.perf_counter() - t
            time.sleep(0.5)
    raise RuntimeError(f"jobs still active {timeout:g} s after the run completed")


def run_size(jobs: int, args: argparse.Namespace) -> tuple[dict[str, Any], list[Sample]]:
    shape = shape_for(jobs)
    load_before = load_average()
    with fresh_database(args.database_url) as url, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env = {
            **os.environ,
            "VALUERANK_DATABASE_URL": url,
            "VALUERANK_RATE_LIMITS_ENABLED": "false",
            "NO_COLOR": "1",
        }
        os.environ["VALUERANK_DATABASE_URL"] = url  # for the in-process command
        import valuerank.cli  # noqa: F401  (imported once here, not inside a timed probe)
        from valuerank.config import get_settings

        get_settings.cache_clear()
        cli_json(env, "db", "upgrade")
        (folder / "bench-scale.md").write_text(definition_md(), encoding="utf-8")
        definition = cli_json(env, "definitions", "import", str(folder / "bench-scale.md"))
        subprocess.run(
            vr_cmd("users", "create", EMAIL, "--org", "default", "--role", "admin"),
            env=env,
            check=True,
            capture_output=True,
        )
        token = cli_json(env, "tokens", "create", "--user", EMAIL)["token"]
        stack = contextlib.ExitStack()
        workers: dict[str, subprocess.Popen[bytes]] = {}
        with stack:
            server, base = _start_server(env)
            stack.callback(_end, server)
            stack.callback(_end_all, workers)
            _start_workers(env, args.concurrency, workers)
            database = url.rsplit("/", 1)[1].split("?", 1)[0]
            sampler = Sampler(
                url, database, {n: p.pid for n, p in workers.items()}, args.sample_seconds
            )
            thread = sampler.start()
            stack.callback(thread.join)
            stack.callback(sampler.stop.set)
            api = stack.enter_context(
                httpx.Client(
                    base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=60
                )
            )
            t0 = time.perf_counter()
            model_args = [a for m in shape.models for a in ("--model", m)]
            created = cli_json(
                env,
                "runs",
                "create",
                "--definition",
                definition["id"],
                *model_args,
                "--sample-percentage",
                f"{shape.percentage:g}",
                "--sample-seed",
                "1",
                "--samples-per-scenario",
                str(shape.samples),
                "--allow-unknown-model",
                "--name",
                f"scale {jobs}",
            )
            create_seconds = time.perf_counter() - t0
            run_id = created["id"]
            sampler.run_id = run_id
            server_env = {**env, API_URL_ENV: base, API_TOKEN_ENV: token}
            probes = Probes(env, run_id, api, server.pid, server_env)
            next_probe = time.perf_counter()
            while sampler.status not in ("completed", "failed", "cancelled"):
                if time.perf_counter() >= next_probe:
                    probes.once("during", startup=False)
                    next_probe = time.perf_counter() + args.probe_seconds
                time.sleep(0.1)
            run_seconds = time.perf_counter() - t0
            if sampler.status != "completed":
                raise RuntimeError(f"the run ended {sampler.status}")
            load_end = load_average()
            analysis_seconds = _wait_idle(url, timeout=1800)
            for _ in range(args.after_probes):
                probes.once("after", startup=True)
            sampler.stop.set()
            for proc in workers.values():
                proc.send_signal(signal.SIGTERM)
            peaks = {name: round(wait_rusage(proc)[1], 1) for name, proc in workers.items()}
        backend_cpu = sum(sampler.backend_cpu.values())
        result = {
            "jobs": created["jobs"],
            "shape": {
                "scenarios": created["scenarios"],
                "models": len(shape.models),
                "samples_per_scenario": shape.samples,
            },
            "workers": WORKERS,
            "concurrency": args.concurrency,
            "create_seconds": round(create_seconds, 2),
            "run_seconds": round(run_seconds, 2),
            "seconds_per_1k_jobs": round(1000 * run_seconds / created["jobs"], 3),
            "jobs_per_second": round(created["jobs"] / run_seconds, 1),
            "peak_rss_mb": peaks,
            "rss_mb": {
                name: _rss_profile(sampler.samples, name, created["jobs"]) for name in workers
            },
            "analysis_seconds": round(analysis_seconds, 2),
            "cpu_seconds_per_1k_jobs": {
                "workers": round(1000 * sum(sampler.worker_cpu.values()) / created["jobs"], 3),
                "postgres": round(1000 * backend_cpu / created["jobs"], 3),
            },
            "status_ms": probes.summary(),
            "load_average": {"before": load_before, "end_of_run": load_end},
        }
        sizes = _table_sizes(url)
        result["tables"] = {
            t: {"bytes": b, "bytes_per_job": round(b / created["jobs"], 1)}
            for t, b in sizes.items()
        }
        result["export"] = _export(env, run_id, folder)
        result["prune"] = _prune(url, env)
        return result, sampler.samples


# -- output --------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    """Where it ran, with the server's settings that change the figures: without autovacuum
    (CI machines turn it off) dead rows of `jobs` pile up and a long run slows down."""
    with psycopg.connect(libpq(BASE_URL), autocommit=True) as conn:
        settings = {
            name: str(row[0]) if (row := conn.execute(f"SHOW {name}").fetchone()) else None
            for name in ("server_version", "autovacuum", "shared_buffers", "fsync")
        }
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "postgresql": settings.pop("server_version"),
        "postgresql_settings": settings,
        "platform": platform.platform(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__)
    parser.add_argument("--jobs", default="1000", help="job counts, comma-separated")
    parser.add_argument("--concurrency", type=int, default=8, help="jobs per worker at once")
    parser.add_argument("--probe-seconds", type=float, default=10.0, help="status probe interval")
    parser.add_argument("--after-probes", type=int, default=5, help="status probes after the run")
    parser.add_argument("--sample-seconds", type=float, default=0.5)
    parser.add_argument("--database-url", default=BASE_URL)
    parser.add_argument("--plot", type=Path, help="PNG of throughput and RSS of the largest run")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.jobs.split(",")]
    results, largest = [], (0, list[Sample]())
    for jobs in sizes:
        result, samples = run_size(jobs, args)
        results.append(result)
        if jobs >= largest[0]:
            largest = (result["jobs"], samples)
        if not args.json:
            print(json.dumps(result, indent=2), file=sys.stderr)
    if args.plot:
        plot(largest[1], largest[0], WORKERS, args.plot)
    report = {
        "machine": machine(),
        "seconds_per_1k_jobs": {str(r["jobs"]): r["seconds_per_1k_jobs"] for r in results},
        "peak_rss_mb": {str(r["jobs"]): r["peak_rss_mb"] for r in results},
        "sizes": results,
    }
    out = io.StringIO()
    json.dump(report, out, indent=2)
    print(out.getvalue())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
