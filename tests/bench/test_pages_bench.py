"""`python -m bench.pages` end to end at a tiny size: every page answers and is timed."""

from __future__ import annotations

from tests.bench.bench_support import run_bench


def test_the_pages_benchmark_times_every_page() -> None:
    report = run_bench("pages", "--runs", "2", "--transcripts", "60", "--warm", "1", timeout=280)
    organisation = report["organisation"]
    assert organisation["runs"] == 2 and organisation["transcripts"] == 60
    pages = report["pages"]
    assert {"runs", "run", "transcripts", "transcript", "analysis", "matrix", "lineage"} <= set(
        pages
    )
    for figures in pages.values():
        assert figures["requests"] == 1
        assert 0 < figures["p50_ms"] <= figures["p95_ms"] <= figures["max_ms"]
        assert figures["ratio_to_budget"] == round(figures["p95_ms"] / 300.0, 3)
    slowest = max(pages, key=lambda name: pages[name]["p95_ms"])
    assert report["slowest"] == {"page": slowest, "p95_ms": pages[slowest]["p95_ms"]}
    assert report["over_budget"] == sorted(
        name for name, figures in pages.items() if figures["p95_ms"] > 300.0
    )
