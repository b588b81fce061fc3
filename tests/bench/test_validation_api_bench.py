"""The validation API benchmark still runs end to end (servers, authentication, both cache
modes) at a tiny size: a benchmark that rots silently reports nothing when it is needed."""

from __future__ import annotations

from tests.bench.bench_support import run_bench


def test_the_benchmark_measures_both_reads_in_both_modes() -> None:
    report = run_bench(
        "validation_api", "--tasks", "2", "--tags", "2", "--models", "2",
        "--clients", "1", "2", "--rates", "20", "--seconds", "0.3",
    )  # fmt: skip
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
        assert row["client_cpu_ms_per_request"] > 0
    opened = {(r["endpoint"], r["mode"], r["rate_per_s"]) for r in report["open_loop"]}
    assert opened == {
        (endpoint, mode, 20.0)
        for endpoint in ("multi_model_view", "task_consensus")
        for mode in ("cached", "uncached")
    }
    for row in report["open_loop"]:
        assert row["requests"] > 0 and row["max_in_flight"] >= 1
        assert row["p95_ms"] >= row["p50_ms"] > 0
