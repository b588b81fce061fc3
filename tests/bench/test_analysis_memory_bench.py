"""The analysis memory benchmark still runs end to end (a seeded run on a fresh PostgreSQL
database, the analysis in a new process) at a tiny size, judged and not."""

from __future__ import annotations

import pytest
from tests.bench.bench_support import run_bench


@pytest.mark.parametrize("judges", [0, 2])
def test_the_benchmark_measures_an_analysis_of_the_seeded_run(judges: int) -> None:
    report = run_bench(
        "analysis_memory", "--transcripts", "120", "--judges", str(judges), "--repeats", "1"
    )
    assert report["run"]["transcripts"] == 120 and report["run"]["judges"] == judges
    (measured,) = report["measurements"]
    assert measured["transcripts_analysed"] == 120
    assert measured["peak_rss_mb"] >= measured["with_stack_rss_mb"] > measured["worker_rss_mb"]
    assert report["peak_rss_mb"] == measured["peak_rss_mb"]
