"""Benchmark of the analysis code (compute only, no database): `python -m bench.analysis`.

The budgets: analyze:basic (value sensitivities included) on 10,000 transcripts (10 models ×
1,000 scenarios) in at most 200 ms of compute (the value-profile issue allows 1 s; the older
200 ms budget is kept), analyze:deep on 20 models × 2,000 scenarios in at most 10 s, and the
shareable report of the 10,000-transcript run (its five figures drawn, no cache, and the
HTML rendered) in at most 2 s. The runs are synthetic but
realistic (`valuerank.analysis.synthetic`): decisions driven by dimension levels with
model-specific weights and noise, contrarians, refusals, missing (model, scenario) cells,
scenarios lacking a dimension, and judge consensus values. Building the input arrays from
rows is timed separately (in production it overlaps the database read).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from valuerank.analysis import AnalysisInput, analyze_basic, analyze_deep
from valuerank.analysis.synthetic import SyntheticSpec, synthetic_run
from valuerank.report.figures import report_figures
from valuerank.report.render import ReportDocument, RunHeader, render_report

BASIC_BUDGET_MS = 200.0
DEEP_BUDGET_MS = 10_000.0
REPORT_BUDGET_MS = 2_000.0


def _timed(fn: Callable[[], Any], repeat: int) -> tuple[list[float], Any]:
    times = []
    result = None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - started) * 1000)
    return times, result


# 10 models × 1,031 scenarios with refusals, missing cells and dimensions: ~10,000 transcripts.
TEN_THOUSAND = SyntheticSpec(
    models=10, scenarios=1031, dimensions=4, refusal_rate=0.05, missing_rate=0.03,
    missing_dimension_rate=0.02, seed=11,
)  # fmt: skip


def _summary(
    case: str, data: AnalysisInput, times: list[float], budget_ms: float, **extra: Any
) -> dict[str, Any]:
    median = statistics.median(times)
    return {
        "case": case,
        "transcripts": data.n,
        "models": len(data.models),
        "scenarios": len(data.scenarios),
        "repeat": len(times),
        "median_ms": round(median, 1),
        "min_ms": round(min(times), 1),
        "max_ms": round(max(times), 1),
        "budget_ms": budget_ms,
        "ratio_to_budget": round(median / budget_ms, 3),
        **extra,
    }


def basic_case(repeat: int) -> dict[str, Any]:
    spec = TEN_THOUSAND
    build_ms, data = _timed(lambda: synthetic_run(spec), 1)
    analyze_basic(data)  # warm-up: imports, first-call caches
    times, result = _timed(lambda: analyze_basic(data), repeat)
    return _summary(
        "analyze:basic",
        data,
        times,
        BASIC_BUDGET_MS,
        build_input_ms=round(build_ms[0], 1),
        warnings=sorted({w["code"] for w in result["warnings"]}),
    )


def deep_case(repeat: int, bootstrap: int) -> dict[str, Any]:
    spec = SyntheticSpec(
        models=20, scenarios=2000, dimensions=4, refusal_rate=0.05, missing_rate=0.03,
        missing_dimension_rate=0.02, seed=12,
    )  # fmt: skip
    data = synthetic_run(spec)
    basic = analyze_basic(data)
    times, result = _timed(lambda: analyze_deep(data, basic=basic, bootstrap=bootstrap), repeat)
    return _summary(
        "analyze:deep",
        data,
        times,
        DEEP_BUDGET_MS,
        bootstrap_draws=bootstrap,
        insights=len(result["insights"]),
    )


def report_case(repeat: int) -> dict[str, Any]:
    """The report as `valuerank report` builds it once the analysis is cached: every figure
    drawn (no figure cache) and the HTML rendered from the stored JSON."""
    data = synthetic_run(TEN_THOUSAND)
    basic = analyze_basic(data)
    deep = analyze_deep(data, basic=basic)
    header = RunHeader(
        id="bench-run", name="bench", status="completed", created_at="2026-11-28T00:00:00+00:00",
        finished_at=None, models=list(data.models), synthetic=True,
    )  # fmt: skip

    def build() -> str:
        figures = report_figures(basic, deep)
        generated = datetime.now(UTC)
        doc = ReportDocument(run=header, basic=basic, generated_at=generated, figures=figures)
        return render_report(doc)

    build()  # warm-up: matplotlib's font cache, jinja2's template compilation
    times, html = _timed(build, repeat)
    return _summary("report", data, times, REPORT_BUDGET_MS, html_bytes=len(html.encode()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="runs of analyze:basic")
    parser.add_argument("--deep-repeat", type=int, default=3, help="runs of analyze:deep")
    parser.add_argument("--bootstrap", type=int, default=200, help="Bradley–Terry draws")
    parser.add_argument("--report-repeat", type=int, default=3, help="reports built")
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout")
    args = parser.parse_args()
    load_before = os.getloadavg()
    results = [
        basic_case(args.repeat),
        deep_case(args.deep_repeat, args.bootstrap),
        report_case(args.report_repeat),
    ]
    report: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "results": results,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for r in results:
        print(
            f"{r['case']}: {r['transcripts']} transcripts, {r['models']} models × "
            f"{r['scenarios']} scenarios: median {r['median_ms']} ms "
            f"(budget {r['budget_ms']:.0f} ms, ratio {r['ratio_to_budget']})"
        )


if __name__ == "__main__":
    main()
