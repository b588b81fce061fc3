"""`python -m bench.db_paths` runs as documented and measures both paths."""

from __future__ import annotations

from tests.bench.bench_support import run_bench


def test_the_fast_and_stock_paths_are_both_measured() -> None:
    report = run_bench("db_paths", "--transactions", "30", "--repeats", "1")
    for path in ("fast", "stock"):
        assert report[path]["cpu_ms"] > 0 and report[path]["wall_ms"] > 0
    assert report["cpu_ratio_stock_over_fast"] == (
        report["stock"]["cpu_ms"] / report["fast"]["cpu_ms"]
    )
    assert len(report["load_average"]["before"]) == 3
