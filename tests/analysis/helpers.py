"""Small hand-made runs for the analysis tests."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from valuerank.analysis.data import AnalysisInput, ScenarioInfo
from valuerank.analysis.sampling import SampleBasis

Row = tuple[str, str, int | None]  # (model, scenario, decision)


def run_of(
    rows: Sequence[Row],
    *,
    levels: Mapping[str, Mapping[str, float]] | None = None,
    values: Sequence[tuple[Sequence[str], Sequence[str]] | None] | None = None,
    reasons: Sequence[str | None] | None = None,
    sample: SampleBasis | None = None,
) -> AnalysisInput:
    """An input from (model, scenario, decision) rows; `values[i]` = (prioritised,
    deprioritised) of row i or None when it was not judged."""
    scenario_ids = sorted({s for _, s, _ in rows} | set(levels or {}))
    scenarios = {
        s: ScenarioInfo(name=f"name of {s}", levels=dict((levels or {}).get(s, {})))
        for s in scenario_ids
    }
    judged = [v is not None for v in values] if values is not None else None
    return AnalysisInput.build(
        models=[m for m, _, _ in rows],
        scenario_ids=[s for _, s, _ in rows],
        decisions=[d for _, _, d in rows],
        reasons=list(reasons)
        if reasons is not None
        else ["refusal" if d is None else None for _, _, d in rows],
        scenarios=scenarios,
        prioritized=[v[0] if v else () for v in values] if values is not None else None,
        deprioritized=[v[1] if v else () for v in values] if values is not None else None,
        judged=judged,
        sample=sample,
    )


def strict_json(data: Any) -> Any:
    """The data through strict JSON (fails on NaN/Infinity) and back."""
    return json.loads(json.dumps(data, allow_nan=False))
