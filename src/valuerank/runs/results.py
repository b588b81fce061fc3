"""Per-model results of a run: how each model decided on the 1–5 scale."""

from __future__ import annotations

import math
from collections.abc import Iterable

from pydantic import Field, field_serializer
from pydantic.dataclasses import dataclass
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.runs.tallies import Tally, run_tally
from valuerank.shapes import SHAPE


@dataclass(frozen=True, config=SHAPE)
class ModelResult:
    """How one model of a run decided (a shape: `shapes.dump` writes it, and reads a
    server's answer back with `TypeAdapter(ModelResult)`)."""

    model: str
    transcripts: int
    decided: int
    refusals: int
    mean_decision: float | None
    stdev_decision: float | None
    decision_counts: dict[int, int] = Field(
        default_factory=dict, description="Decision code (1–5) → transcripts."
    )
    cost_usd: float | None = None
    synthetic: bool = False

    @field_serializer("mean_decision", "stdev_decision")
    def _rounded(self, value: float | None) -> float | None:
        return None if value is None else round(value, 3)

    @field_serializer("decision_counts")
    def _by_code(self, counts: dict[int, int]) -> dict[str, int]:
        return {str(k): v for k, v in sorted(counts.items())}


def _mean_stdev(counts: dict[int, int]) -> tuple[float | None, float | None]:
    """Mean and sample standard deviation of the codes, from how often each occurs (exact
    sums in integers, as `statistics` computes them)."""
    n = sum(counts.values())
    if n == 0:
        return None, None
    s1 = sum(code * k for code, k in counts.items())
    s2 = sum(code * code * k for code, k in counts.items())
    mean = s1 / n
    if n < 2:
        return mean, None
    return mean, math.sqrt((n * s2 - s1 * s1) / (n * (n - 1)))


def summarise(tallies: Iterable[Tally]) -> list[ModelResult]:
    """A run's tallies (by model and decision code) → one result per model, by model name."""
    by_model: dict[str, list[Tally]] = {}
    for tally in tallies:
        by_model.setdefault(tally.model, []).append(tally)
    results = []
    for model, items in sorted(by_model.items()):
        counts = {g.decision_code: g.transcripts for g in items if g.decision_code is not None}
        mean, stdev = _mean_stdev(counts)
        total = sum(g.transcripts for g in items)
        known = sum(g.costs_known for g in items)
        results.append(
            ModelResult(
                model=model,
                transcripts=total,
                decided=sum(counts.values()),
                refusals=sum(g.refusals for g in items),
                mean_decision=mean,
                stdev_decision=stdev,
                decision_counts=counts,
                cost_usd=round(sum(g.cost_usd for g in items), 6) if known == total else None,
                synthetic=any(g.synthetic for g in items),
            )
        )
    return results


async def model_results(conn: AsyncConnection, org_id: str, run_id: str) -> list[ModelResult]:
    """Per-model results from the run's tallies (a few rows per model, at any run size)."""
    return summarise(await run_tally(conn, org_id, run_id))
