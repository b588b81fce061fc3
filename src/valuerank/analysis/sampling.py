"""What the figures of a sampled run rest on, and the finite-population correction.

A sampled run measures `scenarios` of the definition's `total` scenarios (a nested
deterministic sample). Its figures estimate what the full run would show, so their intervals
use the finite-population correction: the standard error of a mean or proportion over a
sample of n drawn without replacement from N is multiplied by

    fpc = sqrt((N - n) / (N - 1))

(Cochran, *Sampling Techniques*, 3rd ed., eq. 2.12). It applies to the scenario-level
(between-scenario) part of a figure's variance only: the models' answers to a scenario vary
from sample to sample whatever the share run. So a run's figures weigh the two parts by
`between_weight` = fpc² — 1 for a tiny share or an unknown N, 0 for a full run, where only the
within-scenario part remains (clustered.py) — and expanding a run narrows its intervals in
expectation up to 100 %. `fpc` stays None for a full run: it is the factor of a sample.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from valuerank.analysis.warning import AnalysisWarning

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class SampleBasis:
    """`scenarios` of `total` (None when unknown, e.g. an imported run without its
    definition) at `percentage` %."""

    percentage: float
    scenarios: int
    total: int | None

    @property
    def sampled(self) -> bool:
        """Fewer scenarios than the population (a share under 100 % when it is unknown)."""
        if self.total is not None:
            return self.scenarios < self.total
        return self.percentage < 100

    @property
    def fpc(self) -> float | None:
        """The correction factor, or None when it does not apply (a full run, N unknown)."""
        if not self.sampled:
            return None
        return fpc_of(self.total, self.scenarios)

    @property
    def between_weight(self) -> float:
        """g = fpc²: the weight of the between-scenario variance in a figure's variance, 0
        for a full run, 1 when the population is unknown."""
        if not self.sampled:
            return 0.0
        fpc = self.fpc
        return 1.0 if fpc is None else fpc * fpc

    @property
    def basis(self) -> str:
        """The sentence every figure of a sampled run carries."""
        if not self.sampled:
            total = self.total if self.total is not None else self.scenarios
            return f"based on all {total} scenarios"
        if self.total is None:
            return (
                f"based on {self.percentage:g} % sample: {self.scenarios} scenarios "
                "(population size unknown)"
            )
        return f"based on {self.percentage:g} % sample: {self.scenarios} of {self.total} scenarios"

    def to_dict(self) -> dict[str, Any]:
        fraction = None if not self.total else self.scenarios / self.total
        return {
            "percentage": self.percentage,
            "scenarios": self.scenarios,
            "totalScenarios": self.total,
            "fraction": fraction,
            "sampled": self.sampled,
            "finitePopulationCorrection": self.fpc,
            "basis": self.basis,
        }


def paired_population(a: SampleBasis | None, b: SampleBasis | None) -> int | None:
    """How many scenarios two runs' pairs are drawn from, when at least one run is a sample
    and both populations are known: the smaller of the two scenario counts. For two runs of
    one definition that is exactly its scenarios; for two versions it bounds the scenarios
    they share from above, so the correction is never smaller (the interval never narrower)
    than it should be. None: no correction (two full runs, or a population unknown)."""
    if a is None or b is None or not (a.sampled or b.sampled):
        return None
    totals = [s.total if s.sampled else (s.total or s.scenarios) for s in (a, b)]
    if any(t is None for t in totals):
        return None
    return min(t for t in totals if t is not None)


def between_weight_of(sample: SampleBasis | None) -> float:
    """`sample.between_weight`, 1 when the basis is unknown (the scenarios then count as a
    sample of an unbounded population: the conservative choice)."""
    return 1.0 if sample is None else sample.between_weight


def between_weights(sample: SampleBasis | None, scenarios: npt.ArrayLike) -> FloatArray:
    """g = fpc² of each figure resting on `scenarios` scenarios (a model's basis is the
    scenarios it decided, not the run's): (N − n)/(N − 1) with N the definition's scenario
    count (the run's own for a full run without one); 1 where N is unknown."""
    n = np.asarray(scenarios, dtype=float)
    population = None
    if sample is not None:
        population = sample.total if sample.total is not None else None
        if population is None and not sample.sampled:
            population = sample.scenarios
    if population is None or population <= 1:
        return np.ones_like(n)
    weights: FloatArray = np.clip((population - n) / (population - 1), 0.0, 1.0)
    return weights


def fpc_of(population: int | None, n: int) -> float | None:
    """sqrt((N − n)/(N − 1)) for n of N scenarios; None when N is unknown or ≤ 1."""
    if population is None or population <= 1:
        return None
    n = min(n, population)
    return math.sqrt((population - n) / (population - 1))


def basis_warnings(sample: SampleBasis | None) -> list[AnalysisWarning]:
    """SAMPLED_RUN with the basis when the run is a sample; POPULATION_UNKNOWN when the
    number of scenarios it was drawn from is not known (no correction then)."""
    if sample is None or not sample.sampled:
        return []
    found = [
        AnalysisWarning(
            "SAMPLED_RUN",
            f"Figures are {sample.basis}",
            "Mean-decision and win-rate intervals use the finite-population correction where "
            "samples repeat a scenario (other figures take none); expand the run "
            "(`valuerank runs expand RUN --sample-percentage 100`) for the full figures",
        )
    ]
    if sample.total is None:
        found.append(
            AnalysisWarning(
                "POPULATION_UNKNOWN",
                "The run's definition is unknown, so the number of scenarios sampled from is too",
                "Intervals are not corrected for the finite population",
            )
        )
    return found
