"""The analysis memory benchmark still runs end to end (a seeded run on a fresh PostgreSQL
database, the analysis in a new process) at a tiny size, judged and not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import PG_URL, require_postgres

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("judges", [0, 2])
def test_the_benchmark_measures_an_analysis_of_the_seeded_run(judges: int) -> None:
    require_postgres()
    done = subprocess.run(
        [sys.executable, "-m", "bench.analysis_memory", "--json", "--transcripts", "120",
         "--judges", str(judges), "--repeats", "1"],
        cwd=ROOT,
        env={**os.environ, "VALUERANK_BENCH_DATABASE_URL": PG_URL},
        capture_output=True,
        text=True,
        timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["run"]["transcripts"] == 120 and report["run"]["judges"] == judges
    (measured,) = report["measurements"]
    assert measured["transcripts_analysed"] == 120
    assert measured["peak_rss_mb"] >= measured["with_stack_rss_mb"] > measured["worker_rss_mb"]
    assert report["peak_rss_mb"] == measured["peak_rss_mb"]
