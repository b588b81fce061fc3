"""The validation API benchmark still runs end to end (servers, authentication, both cache
modes) at a tiny size: a benchmark that rots silently reports nothing when it is needed."""

from __future__ import annotations

from tests.bench.bench_support import run_bench


def test_the_benchmark_measures_both_reads_in_both_modes() -> None:
    report = run_bench(
        "validation_api", "--tasks", "2", "--tags", "2", "--models", "2",
        "--clients", "1", "2", "--seconds", "0.3",
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
