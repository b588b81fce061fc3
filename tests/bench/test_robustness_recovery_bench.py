"""The order effect's parameter-recovery study still runs end to end (a few runs per design),
as its users run it: `python -m bench.robustness_recovery --json`."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.bench.bench_support import ROOT


def test_the_recovery_study_reports_coverage_and_flags_per_design() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.robustness_recovery", "--json", "--smoke", "--runs", "8"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    designs = report["designs"]
    assert len(designs) >= 4
    for result in designs.values():
        effect = result["orderEffect"]
        assert result["runs"] == 8
        assert 0 <= effect["coverage"]["rate"] <= 1 and effect["coverage"]["runs"] == 8
        assert effect["truth"] <= effect["unclippedTruth"] + 1e-9  # clipping only shrinks it
        assert 0 <= result["orderBiasFlagged"]["rate"] <= 1
    biased = designs["b=0.8, 40 scenarios x 2 orders x 2 samples"]
    assert biased["orderBiasFlagged"]["rate"] == 1.0  # a strong pull is always found


def test_the_study_refuses_fewer_than_500_runs_without_smoke() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.robustness_recovery", "--runs", "10"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "at least 500" in done.stderr
