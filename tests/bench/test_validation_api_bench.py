"""The validation API benchmark still runs end to end (servers, authentication, both cache
modes) at a tiny size: a benchmark that rots silently reports nothing when it is needed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import PG_URL, require_postgres

ROOT = Path(__file__).resolve().parents[2]


def test_the_benchmark_measures_both_reads_in_both_modes() -> None:
    require_postgres()
    done = subprocess.run(
        [sys.executable, "-m", "bench.validation_api", "--json", "--tasks", "2", "--tags", "2",
         "--models", "2", "--clients", "1", "2", "--seconds", "0.3"],
        cwd=ROOT,
        env={**os.environ, "VALUERANK_BENCH_DATABASE_URL": PG_URL},
        capture_output=True,
        text=True,
        timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    seen = {(r["endpoint"], r["mode"], r["clients"]) for r in report["results"]}
    assert seen == {
        (endpoint, mode, clients)
        for endpoint in ("multi_model_view", "task_consensus")
        for mode in ("cached", "uncached")
        for clients in (1, 2)
    }
    for row in report["results"]:
        assert row["requests"] > 0 and row["p95_ms"] >= row["p50_ms"] > 0
        assert row["server_cpu_ms_per_request"] > 0
