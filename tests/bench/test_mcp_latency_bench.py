"""`python -m bench.mcp_latency` runs as documented (SQLite, the real server in a child
process) at a tiny size, and measures both reads of the same cached analysis."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_benchmark_times_mcp_beside_the_json_api() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.mcp_latency", "--json", "--requests", "3", "--warmup", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["database"] == "sqlite"
    for kind in ("json_api", "mcp"):
        figures = report[kind]
        assert figures["requests"] == 3
        assert 0 < figures["p50_ms"] <= figures["p95_ms"] <= figures["max_ms"]
    assert report["mcp_to_json_api_p50"] > 0
    assert len(report["load_average_before"]) == len(report["load_average_after"]) == 3
