"""The analysis page benchmark still runs end to end (a seeded judged run on a fresh
PostgreSQL database, the real server in a child process) at a tiny size, and its figures
say what they measure: warm loads served without re-rendering the figures."""

from __future__ import annotations

from tests.bench.bench_support import run_bench


def test_the_benchmark_times_cold_and_warm_loads_of_the_page() -> None:
    report = run_bench("analysis_page", "--transcripts", "120", "--warm", "3")
    assert report["run"]["transcripts"] == 120 and report["run"]["judges"] == 2
    warm = report["warm"]
    assert warm["requests"] == 3 and 0 < warm["p50_ms"] <= warm["p95_ms"] <= warm["max_ms"]
    assert report["cold_ms"] > warm["p50_ms"]  # the cold load drew the figures; warm ones not
    assert report["ratio_to_budget"] == round(warm["p95_ms"] / 300.0, 3)
    assert report["api_analysis"]["requests"] == 5 and report["page_bytes"] > 10_000
