"""End to end, side by side with Inspect AI: the same prompts through both, as users run them.

The prompts: a definition (`bench.e2e_prompts`) whose expansion has exactly `--prompts`
scenarios; Inspect gets the identical rendered turn-1 prompts as a JSON-lines dataset of
Samples. One model call per prompt in both (our run has `--followup-turns 0`).

Two models, each in both systems:
- instant: Inspect's `mockllm/model`; our `scripted:utilitarian?latency_ms=0`.
- fake server: one OpenAI-compatible server on loopback (`bench.e2e_fake`, its own process,
  a fresh one per measurement) answering in `--latency` seconds; Inspect through its `openai`
  provider (`--model openai/gpt-4.1-mini --model-base-url …`), ours through `openai:gpt-4.1-mini`
  with `VALUERANK_OPENAI_BASE_URL`. Both are the official `openai` SDK over HTTP/1.1.

Inspect runs as `inspect eval bench/e2e_inspect_task.py …` with its defaults (adaptive
connections, 10 to 100 starting at 20), then with `--max-connections K` for each K of
`--inspect-connections`; its durable result is its eval log (`.eval`).
Ours runs through `valuerank` as users do: `definitions import` (not timed), then timed
`runs create … --followup-turns 0` and, on SQLite, `runs wait RUN --work` (one process,
worker concurrency `VALUERANK_WORKER_CONCURRENCY`, default 4, then each K of
`--ours-concurrency`); on PostgreSQL (`--database postgresql`, a fresh schema each time)
`runs create` then `--pg-workers` processes of `valuerank worker --burst -c K`. Its durable
result is the database: a run, one probe job and one transcript per prompt.

Measured per configuration: samples/s over the whole command(s) (process start to exit,
start-up included, as users wait for it), time to the first durable result (the first
sample in the eval log / the first transcript in the database, polled every 50 ms), the
peak RSS of each system's whole process tree (PostgreSQL's own processes not included), the
CPU time of the tree. Every run is checked: all samples stored, and the fake server saw
exactly the dataset's prompts (an order-independent digest). Each system's best
configuration is compared: `ratio_vs_inspect` = ours / Inspect's samples/s on the fake server.

    python -m bench.e2e --json [--prompts 2000 --latency 0.05 --database sqlite]

Needs the `bench` extra (inspect-ai) in the interpreter that runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote

from bench.e2e_fake import MASK, prompt_digest
from bench.e2e_inspect import inspect_first_result, inspect_log_check
from bench.e2e_proc import Measured, run_measured
from bench.e2e_prompts import write_inputs

BENCH = Path(__file__).resolve().parent
PG_URL = os.environ.get("VALUERANK_BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
INSTANT_MODEL = "scripted:utilitarian?latency_ms=0"
# A chat model name: Inspect sends unknown (frontier) names to the Responses API.
FAKE_MODEL = "gpt-4.1-mini"
TASK_FILE = "e2e_inspect_task.py"


def _bin(name: str) -> list[str]:
    found = Path(sys.executable).parent / name
    if not found.exists():
        raise SystemExit(
            f"{name} is not installed next to {sys.executable}: "
            'pip install -e ".[bench]" into the interpreter that runs bench.e2e'
        )
    return [str(found)]


class FakeServer:
    """`bench.e2e_fake` in its own process."""

    def __init__(self, latency: float) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.e2e_fake", "--latency", str(latency)],
            cwd=BENCH.parent,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().split()
        self.url = f"http://127.0.0.1:{int(line[1])}/v1"

    def stats(self) -> dict[str, int]:
        with urllib.request.urlopen(f"{self.url}/stats", timeout=10) as response:
            data: dict[str, int] = json.loads(response.read())
            return data

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def _summary(
    n: int,
    measured: list[Measured],
    first: float | None,
    last: float | None,
    config: dict[str, Any],
) -> dict[str, Any]:
    seconds = sum(m.seconds for m in measured)
    cpu = sum(m.cpu_seconds for m in measured)
    return {
        "config": config,
        "samples": n,
        "seconds": round(seconds, 2),
        "samples_per_s": round(n / seconds, 1),
        "first_result_s": None if first is None else round(first, 2),
        # The last sample stored, from the store's own timestamps (not the command's exit,
        # which also waits for what follows the samples: Inspect closing its log, our run's
        # finalize and analysis jobs); results_per_s counts samples up to it.
        "last_result_s": None if last is None else round(last, 2),
        "results_per_s": None if not last else round(n / last, 1),
        "peak_rss_mb": round(max(m.peak_rss_bytes for m in measured) / 2**20, 1),
        # Up to the last result: without what follows the samples (our run's analysis job).
        "peak_rss_mb_to_last_result": None
        if last is None
        else round(max(m.peak_until(last) for m in measured) / 2**20, 1),
        "cpu_s": round(cpu, 2),
        "cpu_ms_per_sample": round(cpu * 1000 / n, 2),
    }


def _check(m: Measured) -> None:
    if m.returncode != 0:
        raise RuntimeError(
            f"{' '.join(m.argv[:4])} … exited {m.returncode}:\n{m.stderr[-3000:]}{m.stdout[-1000:]}"
        )


def run_inspect(
    n: int, dataset: Path, work: Path, env: dict[str, str], server: FakeServer | None, k: int | None
) -> dict[str, Any]:
    logs = work / f"inspect-logs-{uuid.uuid4().hex[:8]}"
    argv = [
        *_bin("inspect"),
        "eval",
        TASK_FILE,  # relative to `work`: Inspect refuses absolute task paths
        "-T",
        f"prompts={dataset}",
        "--log-dir",
        str(logs),
        "--display",
        "none",
    ]
    if server is None:
        argv += ["-T", "mock=true"]
    else:
        argv += ["--model", f"openai/{FAKE_MODEL}", "--model-base-url", server.url]
    if k is not None:
        argv += ["--max-connections", str(k)]
    started_wall = time.time()
    m = run_measured(argv, env=env, cwd=work, first_result=lambda: inspect_first_result(logs))
    _check(m)
    stored = inspect_log_check(logs)
    last_at = stored.pop("last_completed_at")
    last = None if last_at is None else last_at - started_wall
    if stored["samples"] != n or stored["status"] != "success":
        raise RuntimeError(f"Inspect's log holds {stored}, expected {n} samples and success")
    config = {"max_connections": k} if k is not None else {"defaults": "adaptive 10-20-100"}
    return {**_summary(n, [m], m.first_result_s, last, config), "stored": stored}


def _sqlite_has_transcript(path: Path) -> Callable[[], bool]:
    def probe() -> bool:
        if not path.exists():
            return False
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1) as conn:
            return conn.execute("SELECT 1 FROM transcripts LIMIT 1").fetchone() is not None

    return probe


def _pg_has_transcript(schema: str) -> Callable[[], bool]:
    import psycopg

    def probe() -> bool:
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            row = conn.execute(f'SELECT 1 FROM "{schema}".transcripts LIMIT 1').fetchone()
            return row is not None

    return probe


def last_probe(url: str, schema: str | None) -> float | None:
    """When our last probe job finished (Unix time, the database's clock)."""
    query = "SELECT max(finished_at) FROM {}jobs WHERE kind = 'probe'"
    if schema is None:
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            value = conn.execute(query.format("")).fetchone()[0]
        if value is None:
            return None
        return datetime.fromisoformat(value).replace(tzinfo=UTC).timestamp()
    import psycopg

    with psycopg.connect(PG_URL, autocommit=True) as conn:
        row = conn.execute(query.format(f'"{schema}".')).fetchone()
    return None if row is None or row[0] is None else float(row[0].timestamp())


def _inspect_job(
    n: int, dataset: Path, work: Path, env: dict[str, str], k: int | None, s: FakeServer | None
) -> dict[str, Any]:
    return run_inspect(n, dataset, work, env, s, k)


def _ours_job(
    n: int,
    definition: Path,
    work: Path,
    env: dict[str, str],
    k: int | None,
    database: str,
    workers: int,
    s: FakeServer | None,
) -> dict[str, Any]:
    return run_ours(n, definition, work, env, s, k, database, workers)


def run_ours(
    n: int,
    definition: Path,
    work: Path,
    env: dict[str, str],
    server: FakeServer | None,
    k: int | None,
    database: str,
    workers: int = 1,
) -> dict[str, Any]:
    env = dict(env)
    schema = None
    if database == "sqlite":
        db_path = work / f"vr-{uuid.uuid4().hex[:8]}.db"
        env["VALUERANK_DATABASE_URL"] = f"sqlite:///{db_path}"
        first = _sqlite_has_transcript(db_path)
    else:
        import psycopg

        schema = f"vr_e2e_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(PG_URL, autocommit=True) as c:
            c.execute(f'CREATE SCHEMA "{schema}"')
        sep = "&" if "?" in PG_URL else "?"
        env["VALUERANK_DATABASE_URL"] = f"{PG_URL}{sep}options={quote(f'-csearch_path={schema}')}"
        first = _pg_has_transcript(schema)
    if k is not None:
        env["VALUERANK_WORKER_CONCURRENCY"] = str(k)
    if server is not None:
        env["VALUERANK_OPENAI_BASE_URL"] = server.url
    vr = _bin("valuerank")

    def setup(*argv: str) -> Any:
        done = subprocess.run([*vr, *argv], env=env, cwd=work, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"valuerank {' '.join(argv)} failed:\n{done.stdout}{done.stderr}")
        return json.loads(done.stdout) if "--json" in argv else None

    try:
        if database != "sqlite":
            setup("db", "upgrade")  # PostgreSQL is migrated by its operator, SQLite on first use
        definition_id = setup("definitions", "import", str(definition), "--json")["id"]
        model = INSTANT_MODEL if server is None else f"openai:{FAKE_MODEL}"
        started, started_wall = time.monotonic(), time.time()
        create_argv = ["runs", "create", "-d", definition_id, "-m", model, "--json"]
        create_argv += ["--followup-turns", "0", "--sample-seed", "1", "--allow-unknown-model"]
        create = run_measured(
            [*vr, *create_argv],
            env=env,
            cwd=work,
        )
        _check(create)
        run_id = json.loads(create.stdout)["id"]
        if database == "sqlite":
            argv = [*vr, "runs", "wait", run_id, "--work", "--json"]
        else:
            one = [*vr, "worker", "--burst", "--json"] + ([] if k is None else ["-c", str(k)])
            argv = ["sh", "-c", " & ".join([" ".join(one)] * workers) + " & wait"]
        work_m = run_measured(argv, env=env, cwd=work, first_result=first, started=started)
        _check(work_m)
        report = setup("runs", "status", run_id, "--json")
        progress = report["progress"]
        if report["status"] != "completed" or progress["completed"] != n:
            raise RuntimeError(f"our run ended {report['status']} with {progress}")
        config: dict[str, Any] = {
            "database": database,
            "concurrency": k if k is not None else "default (4)",
        }
        if database != "sqlite":
            config["worker_processes"] = workers
        stored = {"status": report["status"], "transcripts": progress["completed"]}
        last_at = last_probe(env["VALUERANK_DATABASE_URL"], schema)
        last = None if last_at is None else last_at - started_wall
        summary = _summary(n, [create, work_m], work_m.first_result_s, last, config)
        return {**summary, "stored": stored}
    finally:
        if schema is not None:
            import psycopg

            with psycopg.connect(PG_URL, autocommit=True) as c:
                c.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _measure(
    fn: Callable[[FakeServer | None], dict[str, Any]],
    latency: float | None,
    expected_digest: int,
    n: int,
) -> dict[str, Any]:
    server = None if latency is None else FakeServer(latency)
    try:
        result = fn(server)
        if server is not None:
            stats = server.stats()
            if stats["completions"] != n or stats["digest"] != expected_digest:
                raise RuntimeError(
                    f"the fake server saw {stats['completions']} completions (expected {n}) "
                    "or other prompts than the dataset's"
                )
            result["server_completions"] = stats["completions"]
        return result
    finally:
        if server is not None:
            server.stop()


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _best(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return max(rows, key=lambda r: r["samples_per_s"])


def compare(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="vr-bench-e2e-"))
    try:
        definition, dataset, prompts = write_inputs(args.prompts, work)
        shutil.copy(BENCH / TASK_FILE, work / TASK_FILE)
        digest = sum(prompt_digest(p) for p in prompts) & MASK
        env = {**os.environ, "OPENAI_API_KEY": "bench-fake-key", "PYTHONPATH": ""}
        env.pop("VALUERANK_DATABASE_URL", None)
        out: dict[str, Any] = {"prompts": args.prompts, "latency_s": args.latency}
        out["machine"] = {"cpus": os.cpu_count(), "load_before": _load()}
        for mode, latency in (("instant", None), ("fake_server", args.latency)):
            if mode not in args.modes:
                continue
            # partial(): each job with its own settings bound (typed, unlike a lambda's defaults).
            inspect_jobs: list[Callable[[FakeServer | None], dict[str, Any]]] = [
                partial(_inspect_job, args.prompts, dataset, work, env, k)
                for k in [None, *args.inspect_connections]
            ]
            ours_jobs: list[Callable[[FakeServer | None], dict[str, Any]]] = []
            for database in args.database:
                for workers in args.pg_workers if database == "postgresql" else [1]:
                    for k in [None, *args.ours_concurrency]:
                        ours_jobs.append(
                            partial(
                                _ours_job, args.prompts, definition, work, env, k, database, workers
                            )
                        )
            # Alternate the systems, so that a change of the machine's load over the run
            # does not fall on one of them.
            rows: dict[str, list[dict[str, Any]]] = {"inspect": [], "ours": []}
            for i in range(max(len(inspect_jobs), len(ours_jobs))):
                for side, queue in (("inspect", inspect_jobs), ("ours", ours_jobs)):
                    if i < len(queue):
                        row = _measure(queue[i], latency, digest, args.prompts)
                        row["load"] = _load()
                        rows[side].append(row)
            inspect_rows, ours_rows = rows["inspect"], rows["ours"]
            best_inspect, best_ours = _best(inspect_rows), _best(ours_rows)
            out[mode] = {
                "inspect": {"best": best_inspect, "all": inspect_rows},
                "ours": {"best": best_ours, "all": ours_rows},
                "ratio": round(best_ours["samples_per_s"] / best_inspect["samples_per_s"], 3),
            }
        out["machine"]["load_after"] = _load()
        if "fake_server" in out:
            out["ratio_vs_inspect"] = out["fake_server"]["ratio"]
        if "instant" in out:
            out["ratio_vs_inspect_instant"] = out["instant"]["ratio"]
        return out
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--prompts", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--modes", type=lambda t: t.split(","), default=["instant", "fake_server"])
    parser.add_argument("--inspect-connections", type=_ints, default=[50, 100, 200])
    parser.add_argument("--ours-concurrency", type=_ints, default=[16, 64, 128])
    parser.add_argument(
        "--database", type=lambda t: t.split(","), default=["sqlite"], help="sqlite,postgresql"
    )
    parser.add_argument("--pg-workers", type=_ints, default=[1])
    parser.add_argument("--keep", action="store_true", help="Keep the work folder (logs, dbs).")
    parser.add_argument("--json", action="store_true", help="Print one JSON document.")
    args = parser.parse_args()
    result = compare(args)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for mode in ("instant", "fake_server"):
        if mode in result:
            r = result[mode]
            for side in ("inspect", "ours"):
                for row in r[side]["all"]:
                    print(
                        f"{mode:12} {side:8} {json.dumps(row['config']):60} "
                        f"{row['samples_per_s']:8.1f}/s ({row['results_per_s']}/s to the last "
                        f"result) first {row['first_result_s']} s "
                        f"rss {row['peak_rss_mb']} MB cpu {row['cpu_ms_per_sample']} ms/sample"
                    )
            print(f"{mode}: ours / Inspect (best of each) = {r['ratio']}")


if __name__ == "__main__":
    main()
