"""End to end, side by side with Inspect AI: the same prompts through both, as users run them.

The prompts: a definition (`bench.e2e_prompts`) whose expansion has exactly `--prompts`
scenarios; Inspect gets the identical rendered turn-1 prompts as a JSON-lines dataset of
Samples. One model call per prompt in both (our run has `--followup-turns 0`), two when judged.

Three modes (`--modes`), each in both systems:
- instant: Inspect's `mockllm/model`; our `scripted:utilitarian?latency_ms=0`.
- fake_server: one OpenAI-compatible server on loopback (`bench.e2e_fake`, its own process,
  a fresh one per measurement) answering in `--latency` seconds; Inspect through its `openai`
  provider (`--model openai/gpt-4.1-mini --model-base-url …`), ours through `openai:gpt-4.1-mini`
  with `VALUERANK_OPENAI_BASE_URL`. Both are the official `openai` SDK over HTTP/1.1.
- judged: the fake server with a judge: ours `runs create … --judge openai:gpt-4.1-mini`
  (one judge job per transcript), Inspect the same task with `model_graded_qa()` (the grader
  is the model under evaluation, the same fake server). Two model calls per prompt in both.

Inspect runs as `inspect eval bench/e2e_inspect_task.py …` with its defaults (adaptive
connections, 10 to 100 starting at 20), then with `--max-connections K` for each K of
`--inspect-connections` (default: its best K of the mode, `INSPECT_BEST`); its durable result
is its eval log (`.eval`). Judged, and with `--quick`, each system runs its best K only
(unless Ks are given). Ours (`bench.e2e_ours`) runs through `valuerank` as users do:
`definitions import` (not timed), then timed `runs create` and, on SQLite,
`runs wait RUN --work` (one process, worker concurrency `VALUERANK_WORKER_CONCURRENCY`, default
4, then each K of `--ours-concurrency`, default its best, `OURS_BEST`); on PostgreSQL
(`--database postgresql`, a fresh schema each time) `--pg-workers` processes of
`valuerank worker --burst -c K`. Its durable result is the database: a run, one probe job and
one transcript per prompt (and one judgment each when judged).

Measured per configuration: samples/s over the whole command(s) (process start to exit,
start-up included, as users wait for it), time to the first durable result (the first
sample in the eval log / the first transcript in the database — the first judgment when
judged — polled every 50 ms), the peak RSS of each system's whole process tree (PostgreSQL's
own processes not included), the CPU time of the tree. Every run is checked: all samples
stored (and judged/scored), and the fake server saw exactly the dataset's prompts and, when
judged, one judge call per answer (order-independent digests). Each system's best
configuration is compared: `ratio` (ours / Inspect's samples/s) and `cpu_ratio` (ours /
Inspect's CPU ms per sample) per mode; `ratio_vs_inspect` is the fake server's ratio,
`ratio_vs_inspect_instant` and `ratio_vs_inspect_judged` the others'.

    python -m bench.e2e --json [--prompts 2000 --latency 0.05 --database sqlite]
    python -m bench.e2e --json --quick   # 500 prompts, each system's best setting only
    python -m bench.e2e --json --load 2  # the same beside 2 CPU-burning processes

Under load (`--load N`): N processes spin (`bench.cpu_load`) for the whole comparison, started
by the benchmark and killed when it ends; `neighbours` has their count and the load average.

Needs the `bench` extra (inspect-ai) in the interpreter that runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from bench.cpu_load import burners
from bench.e2e_fake import MASK, prompt_digest
from bench.e2e_inspect import inspect_first_result, inspect_log_check
from bench.e2e_ours import FAKE_MODEL, bin_path, check_exit, run_ours
from bench.e2e_proc import Measured, run_measured
from bench.e2e_prompts import write_inputs

BENCH = Path(__file__).resolve().parent
TASK_FILE = "e2e_inspect_task.py"
MODES = ("instant", "fake_server", "judged")
# Each system's best setting per mode on this machine (docs/benchmarks.md): the default run
# measures each system's defaults and these only; `--inspect-connections` /
# `--ours-concurrency` replace them in every mode.
INSPECT_BEST = {"instant": [50], "fake_server": [200], "judged": [200]}
OURS_BEST = {"instant": [16], "fake_server": [128], "judged": [128]}
QUICK_PROMPTS = 500


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


def run_inspect(
    n: int,
    dataset: Path,
    work: Path,
    env: dict[str, str],
    k: int | None,
    judged: bool,
    server: FakeServer | None,
) -> dict[str, Any]:
    logs = work / f"inspect-logs-{uuid.uuid4().hex[:8]}"
    argv = [
        *bin_path("inspect"),
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
    if judged:
        argv += ["-T", "judge=true"]
    if k is not None:
        argv += ["--max-connections", str(k)]
    started_wall = time.time()
    m = run_measured(argv, env=env, cwd=work, first_result=lambda: inspect_first_result(logs))
    check_exit(m)
    stored = inspect_log_check(logs)
    last_at = stored.pop("last_completed_at")
    last = None if last_at is None else last_at - started_wall
    if stored["samples"] != n or stored["status"] != "success":
        raise RuntimeError(f"Inspect's log holds {stored}, expected {n} samples and success")
    if judged and stored["scored"] != n:
        raise RuntimeError(f"Inspect's log holds {stored}, expected {n} scored samples")
    config = {"max_connections": k} if k is not None else {"defaults": "adaptive 10-20-100"}
    return {**_summary(n, [m], m.first_result_s, last, config), "stored": stored}


def _ours_job(
    n: int,
    definition: Path,
    work: Path,
    env: dict[str, str],
    k: int | None,
    database: str,
    workers: int,
    judged: bool,
    server: FakeServer | None,
) -> dict[str, Any]:
    url = None if server is None else server.url
    create, work_m, stored = run_ours(n, definition, work, env, url, k, database, workers, judged)
    config: dict[str, Any] = {
        "database": database,
        "concurrency": k if k is not None else "default (4)",
    }
    if database != "sqlite":
        config["worker_processes"] = workers
    if judged:
        config["judges"] = 1
    last = stored.pop("last_s")
    return {**_summary(n, [create, work_m], work_m.first_result_s, last, config), "stored": stored}


def _measure(
    fn: Callable[[FakeServer | None], dict[str, Any]],
    latency: float | None,
    expected_digest: int,
    n: int,
    judged: bool,
) -> dict[str, Any]:
    """Run one configuration against a fresh fake server and check what it was sent: every
    prompt once, and when judged every answer judged once (2 model calls per prompt)."""
    server = None if latency is None else FakeServer(latency)
    try:
        result = fn(server)
        if server is not None:
            stats = server.stats()
            judges = n if judged else 0
            if stats["completions"] != n or stats["digest"] != expected_digest:
                raise RuntimeError(
                    f"the fake server saw {stats['completions']} completions (expected {n}) "
                    "or other prompts than the dataset's"
                )
            if stats["judge_completions"] != judges or (
                judged and stats["judge_digest"] != expected_digest
            ):
                raise RuntimeError(
                    f"the fake server saw {stats['judge_completions']} judge calls (expected "
                    f"{judges}) or judges of other answers than the dataset's"
                )
            result["server_completions"] = stats["completions"]
            if judged:
                result["server_judge_completions"] = stats["judge_completions"]
                result["model_calls_per_sample"] = round(
                    (stats["completions"] + stats["judge_completions"]) / n, 3
                )
        return result
    finally:
        if server is not None:
            server.stop()


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _best(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return max(rows, key=lambda r: r["samples_per_s"])


def _configs(given: list[int] | None, best: list[int], mode: str, quick: bool) -> list[int | None]:
    """The settings one system runs a mode with (None: its defaults). Given Ks: the defaults,
    then each. Else the defaults and the best K (the full run), except when judged (the
    costliest mode; the defaults' cost shows in fake_server) and with --quick: the best only,
    which is what the ratios compare."""
    if given is not None:
        return [None, *given]
    if quick or mode == "judged":
        return list(best)
    return [None, *best]


def _jobs(
    args: argparse.Namespace,
    mode: str,
    definition: Path,
    dataset: Path,
    work: Path,
    env: dict[str, str],
) -> tuple[list[Callable[[FakeServer | None], dict[str, Any]]], ...]:
    """Each system's configurations of one mode (None: the system's defaults)."""
    judged = mode == "judged"
    inspect_ks = _configs(args.inspect_connections, INSPECT_BEST[mode], mode, args.quick)
    ours_ks = _configs(args.ours_concurrency, OURS_BEST[mode], mode, args.quick)
    # partial(): each job with its own settings bound (typed, unlike a lambda's defaults).
    inspect_jobs: list[Callable[[FakeServer | None], dict[str, Any]]] = [
        partial(run_inspect, args.prompts, dataset, work, env, k, judged) for k in inspect_ks
    ]
    ours_jobs: list[Callable[[FakeServer | None], dict[str, Any]]] = []
    for database in args.database:
        for workers in args.pg_workers if database == "postgresql" else [1]:
            for k in ours_ks:
                job = partial(
                    _ours_job, args.prompts, definition, work, env, k, database, workers, judged
                )
                ours_jobs.append(job)
    return inspect_jobs, ours_jobs


def compare(args: argparse.Namespace) -> dict[str, Any]:
    began = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="vr-bench-e2e-"))
    try:
        definition, dataset, prompts = write_inputs(args.prompts, work)
        shutil.copy(BENCH / TASK_FILE, work / TASK_FILE)
        digest = sum(prompt_digest(p) for p in prompts) & MASK
        env = {**os.environ, "OPENAI_API_KEY": "bench-fake-key", "PYTHONPATH": ""}
        env.pop("VALUERANK_DATABASE_URL", None)
        out: dict[str, Any] = {"prompts": args.prompts, "latency_s": args.latency}
        out["quick"] = args.quick
        out["machine"] = {"cpus": os.cpu_count(), "load_before": _load()}
        for mode in MODES:
            if mode not in args.modes:
                continue
            latency = None if mode == "instant" else args.latency
            inspect_jobs, ours_jobs = _jobs(args, mode, definition, dataset, work, env)
            # Alternate the systems, so that a change of the machine's load over the run
            # does not fall on one of them.
            rows: dict[str, list[dict[str, Any]]] = {"inspect": [], "ours": []}
            for i in range(max(len(inspect_jobs), len(ours_jobs))):
                for side, queue in (("inspect", inspect_jobs), ("ours", ours_jobs)):
                    if i < len(queue):
                        row = _measure(queue[i], latency, digest, args.prompts, mode == "judged")
                        row["load"] = _load()
                        rows[side].append(row)
            inspect_rows, ours_rows = rows["inspect"], rows["ours"]
            best_inspect, best_ours = _best(inspect_rows), _best(ours_rows)
            out[mode] = {
                "inspect": {"best": best_inspect, "all": inspect_rows},
                "ours": {"best": best_ours, "all": ours_rows},
                "ratio": round(best_ours["samples_per_s"] / best_inspect["samples_per_s"], 3),
                # CPU per sample of the best of each, ours / Inspect's (lower is ours cheaper).
                "cpu_ratio": round(
                    best_ours["cpu_ms_per_sample"] / best_inspect["cpu_ms_per_sample"], 3
                ),
            }
        out["machine"]["load_after"] = _load()
        if "fake_server" in out:
            out["ratio_vs_inspect"] = out["fake_server"]["ratio"]
        if "instant" in out:
            out["ratio_vs_inspect_instant"] = out["instant"]["ratio"]
        if "judged" in out:
            out["ratio_vs_inspect_judged"] = out["judged"]["ratio"]
        out["elapsed_s"] = round(time.monotonic() - began, 1)
        return out
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--prompts", type=int, default=None, help="2000 (--quick: 500)")
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--modes", type=lambda t: t.split(","), default=list(MODES))
    parser.add_argument(
        "--inspect-connections",
        type=_ints,
        default=None,
        help="--max-connections values after the defaults (default: the best per mode)",
    )
    parser.add_argument(
        "--ours-concurrency",
        type=_ints,
        default=None,
        help="worker concurrencies after the default (default: the best per mode)",
    )
    parser.add_argument(
        "--database", type=lambda t: t.split(","), default=["sqlite"], help="sqlite,postgresql"
    )
    parser.add_argument("--pg-workers", type=_ints, default=[1])
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"{QUICK_PROMPTS} prompts (unless --prompts), each system's best setting only",
    )
    parser.add_argument("--keep", action="store_true", help="Keep the work folder (logs, dbs).")
    parser.add_argument(
        "--load", type=int, default=0, metavar="N", help="N CPU-burning processes beside it"
    )
    parser.add_argument("--json", action="store_true", help="Print one JSON document.")
    args = parser.parse_args()
    unknown = set(args.modes) - set(MODES)
    if unknown:
        parser.error(f"unknown modes {sorted(unknown)}: choose from {', '.join(MODES)}")
    if args.prompts is None:
        args.prompts = QUICK_PROMPTS if args.quick else 2000
    with burners(args.load) as neighbours:
        result = compare(args)
    if args.load:
        result["neighbours"] = neighbours.report()
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for mode in MODES:
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
            print(f"{mode}: ours / Inspect (best of each) = {r['ratio']}, CPU {r['cpu_ratio']}")
    print(f"elapsed {result['elapsed_s']} s")


if __name__ == "__main__":
    main()
