"""Running a benchmark as its users do (`python -m bench.<name> --json …`) against the test
PostgreSQL server, for the smoke tests that keep the benchmarks from rotting."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import PG_URL, require_postgres

ROOT = Path(__file__).resolve().parents[2]


def run_bench(name: str, *args: str, timeout: float = 180) -> dict[str, Any]:
    """`python -m bench.<name> --json *args`; its JSON report (fails on a non-zero exit)."""
    require_postgres()
    done = subprocess.run(
        [sys.executable, "-m", f"bench.{name}", "--json", *args],
        cwd=ROOT,
        env={**os.environ, "VALUERANK_BENCH_DATABASE_URL": PG_URL},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report: dict[str, Any] = json.loads(done.stdout)
    return report
