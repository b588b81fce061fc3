"""Parameter recovery of the value sensitivities: `python -m bench.value_sensitivity`.

Simulates runs from a known model (`valuerank.analysis.synthetic.recovery_run`: per-model,
per-dimension effects, a random effect per scenario shared by its samples, rounding to the
1–5 scale) and estimates them the way `analyze:basic` does (analysis/sensitivity.py). For
each design it prints, per effect, the mean estimate, its bias, the RMSE, the mean width of
the 95 % interval and how often the interval covered the truth — which should be 93–97 % —
and writes everything as JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import time
from dataclasses import asdict
from typing import Any

import numpy as np

from valuerank.analysis.sensitivity import value_sensitivity
from valuerank.analysis.synthetic import RecoverySpec, recovery_run

DESIGNS = {
    # The bundled demo's shape: 3 dimensions × 3 levels, 27 scenarios, 3 samples each.
    "27 scenarios x 3 samples": RecoverySpec(scenarios=27, levels=3, samples=3),
    # A CLI definition's shape (exp-Trans_Athlete…): 3 dimensions × 5 levels, 125 scenarios.
    "125 scenarios x 1 sample": RecoverySpec(scenarios=125, levels=5, samples=1),
    # The unit test's shape, more samples per scenario (the clustering matters most here).
    "40 scenarios x 5 samples": RecoverySpec(scenarios=40, levels=3, samples=5),
}


def study(spec: RecoverySpec, runs: int, seed: int) -> dict[str, Any]:
    truth = np.asarray(spec.effects)
    estimates = np.full((runs, *truth.shape), np.nan)
    lower = np.full_like(estimates, np.nan)
    upper = np.full_like(estimates, np.nan)
    started = time.perf_counter()
    for r in range(runs):
        data = recovery_run(RecoverySpec(**{**asdict(spec), "seed": seed + r}))
        section, _ = value_sensitivity(data)
        for i, model in enumerate(data.models):
            for k, dim in enumerate(data.dimensions):
                entry = section[model][dim]
                if entry["coefficient"] is not None:
                    estimates[r, i, k] = entry["coefficient"]
                if entry["ci95"] is not None:
                    lower[r, i, k], upper[r, i, k] = entry["ci95"]
    seconds = time.perf_counter() - started
    have = ~np.isnan(lower)
    covered = (lower <= truth) & (truth <= upper)
    effects: list[dict[str, Any]] = []
    for i in range(truth.shape[0]):
        for k in range(truth.shape[1]):
            n = int(have[:, i, k].sum())
            coverage = float(covered[:, i, k].sum() / n) if n else math.nan
            effects.append(
                {
                    "model": f"model-{i}",
                    "dimension": f"Dim{k + 1}",
                    "truth": float(truth[i, k]),
                    "meanEstimate": float(np.nanmean(estimates[:, i, k])),
                    "bias": float(np.nanmean(estimates[:, i, k]) - truth[i, k]),
                    "rmse": float(np.sqrt(np.nanmean((estimates[:, i, k] - truth[i, k]) ** 2))),
                    "meanWidth": float(np.nanmean(upper[:, i, k] - lower[:, i, k])),
                    "coverage": coverage,
                    "coverageSE": math.sqrt(coverage * (1 - coverage) / n) if n else math.nan,
                    "runsWithInterval": n,
                }
            )
    pooled = float(covered[have].mean())
    return {
        "spec": asdict(spec),
        "runs": runs,
        "effects": effects,
        "pooledCoverage": pooled,
        "within93to97": all(0.93 <= e["coverage"] <= 0.97 for e in effects),
        "seconds": round(seconds, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000, help="Simulated runs per design.")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default=None, help="Write the JSON here too.")
    args = parser.parse_args()
    if args.runs < 500:
        parser.error("the study needs at least 500 simulated runs per design")
    results = {}
    for name, spec in DESIGNS.items():
        result = study(spec, args.runs, args.seed)
        results[name] = result
        print(f"\n{name}: {args.runs} runs, {result['seconds']} s")
        print(f"  {'effect':<16} {'truth':>6} {'mean':>7} {'bias':>7} {'rmse':>6} {'width':>6} "
              f"{'coverage':>9}")  # fmt: skip
        for e in result["effects"]:
            print(
                f"  {e['model'] + ' ' + e['dimension']:<16} {e['truth']:>6.2f} "
                f"{e['meanEstimate']:>7.3f} {e['bias']:>+7.3f} {e['rmse']:>6.3f} "
                f"{e['meanWidth']:>6.3f} {e['coverage']:>8.1%}"
            )
        print(f"  pooled coverage {result['pooledCoverage']:.1%}")
    report = {
        "benchmark": "value_sensitivity_parameter_recovery",
        "method": "OLS, CR2 cluster-robust by scenario, Bell-McCaffrey t df, 95 % intervals",
        "python": platform.python_version(),
        "designs": results,
    }
    text = json.dumps(report, indent=2)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as out:
            out.write(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
