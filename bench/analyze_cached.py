"""A cached `valuerank analyze` from a fresh process: `python -m bench.analyze_cached --json`.

The goal (maintainability issue): `valuerank analyze RUN` of a small run whose analysis is
cached answers in under 1 s on a quiet machine. It took 5–8 s at load 8, ~2.4 s of it importing
the statistics (scipy, statsmodels) and the plots (matplotlib) before anything was read; a
cached answer needs none of them. A small run (two scripted personas over the demo definition,
a 20 % sample: 10 transcripts) is written into a fresh SQLite database by the CLI itself; then,
each as its own process, as a user runs them, and alternating so that the machine's load
falls on all alike:

- `uncached`: `valuerank analyze RUN --json --force` (loads the run and computes);
- `cached`: `valuerank analyze RUN --json` (the stored row);
- `cached_table`: `valuerank analyze RUN` (the same, printed as tables);
- `report`: `valuerank report RUN -o …` (the cached analysis and the figures a first report
  drew and kept beside it: no matplotlib);
- `bare`: `python -c "import valuerank"`, the interpreter's floor.

Wall time and CPU time (user + system of the child) per process, medians over `--repeat`;
the ratios compare the cached command with the uncached one and with the bare start-up. The
machine's load average is reported before and after: on a shared machine the wall times
follow the load, the CPU times much less.

    python -m bench.analyze_cached --json [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import valuerank

BUDGET_MS = 1000.0
DEMO = Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md"
MODELS = ("scripted:utilitarian", "scripted:contrarian")


def cli_json(env: dict[str, str], *args: str) -> Any:
    """`valuerank ARGS --json` as a user runs it (its own process): the answer, or exit."""
    done = subprocess.run(
        [sys.executable, "-m", "valuerank", *args, "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"valuerank {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    return json.loads(done.stdout)


def seed(env: dict[str, str]) -> str:
    """A completed small run, written by the CLI: its id."""
    cli_json(env, "db", "upgrade")
    definition = cli_json(env, "definitions", "import", str(DEMO))["id"]
    models = [arg for model in MODELS for arg in ("--model", model)]
    created = cli_json(
        env,
        "runs",
        "create",
        "--definition",
        definition,
        *models,
        "--sample-percentage",
        "20",
        "--sample-seed",
        "7",
        "--followup-turns",
        "0",
    )
    run_id = str(created["id"])
    waited = cli_json(env, "runs", "wait", run_id, "--work", "--timeout", "300")
    if waited["status"] != "completed":
        raise SystemExit(f"the run ended {waited['status']}")
    return run_id


def _timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU milliseconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, env=env, check=True, capture_output=True)
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu


def _summary(walls: list[float], cpus: list[float]) -> dict[str, Any]:
    return {
        "wall_median_ms": round(statistics.median(walls), 1),
        "wall_min_ms": round(min(walls), 1),
        "wall_max_ms": round(max(walls), 1),
        "cpu_median_ms": round(statistics.median(cpus), 1),
    }


def measure(repeat: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="vr-bench-cached-") as tmp:
        env = {
            **os.environ,
            "VALUERANK_DATABASE_URL": f"sqlite:///{Path(tmp) / 'valuerank.db'}",
            "VALUERANK_WORKER_POLL_SECONDS": "0.05",
        }
        run_id = seed(env)
        analyze = [sys.executable, "-m", "valuerank", "analyze", run_id]
        commands = {
            "uncached": [*analyze, "--json", "--force"],
            "cached": [*analyze, "--json"],
            "cached_table": analyze,
            "report": [
                *[sys.executable, "-m", "valuerank", "report", run_id],
                *["-o", str(Path(tmp) / "report.html"), "--json"],
            ],
            "bare": [sys.executable, "-c", "import valuerank"],
        }
        # Each `--force` stores its result: every `cached` process after it reads that row.
        _timed(commands["uncached"], env)  # warm-up: the first run's files into the OS cache
        _timed(commands["report"], env)  # the first report draws the figures and keeps them
        load_before = os.getloadavg()
        times: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in commands}
        for _ in range(repeat):
            for name, command in commands.items():
                wall, cpu = _timed(command, env)
                times[name][0].append(wall)
                times[name][1].append(cpu)
        load_after = os.getloadavg()
    cases = {name: _summary(*pair) for name, pair in times.items()}
    cached, uncached, bare = cases["cached"], cases["uncached"], cases["bare"]
    return {
        "benchmark": "analyze_cached",
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "repeat": repeat,
        "transcripts": 10,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
        "budget_ms": BUDGET_MS,
        "cases": cases,
        "ratios": {
            "cached_to_uncached_wall": round(
                cached["wall_median_ms"] / uncached["wall_median_ms"], 3
            ),
            "cached_to_uncached_cpu": round(cached["cpu_median_ms"] / uncached["cpu_median_ms"], 3),
            "cached_to_bare_wall": round(cached["wall_median_ms"] / bare["wall_median_ms"], 2),
            "cached_to_budget_wall": round(cached["wall_median_ms"] / BUDGET_MS, 3),
            "report_to_budget_wall": round(cases["report"]["wall_median_ms"] / BUDGET_MS, 3),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="Print the results as JSON.")
    args = parser.parse_args()
    result = measure(args.repeat)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(
        f"load average before {result['load_average_before']}, after {result['load_average_after']}"
    )
    for name, case in result["cases"].items():
        print(
            f"{name:>13}: wall {case['wall_median_ms']:8.1f} ms (min {case['wall_min_ms']:.1f})"
            f"  cpu {case['cpu_median_ms']:8.1f} ms"
        )
    print("ratios:", result["ratios"])


if __name__ == "__main__":
    main()
