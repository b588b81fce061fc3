"""What the figures of a sampled run rest on, and the finite-population correction.

A sampled run measures `scenarios` of the definition's `total` scenarios (a nested
deterministic sample). Its figures estimate what the full run would show, so their intervals
use the finite-population correction: the standard error of a mean or proportion over a
sample of n drawn without replacement from N is multiplied by

    fpc = sqrt((N - n) / (N - 1))

(Cochran, *Sampling Techniques*, 3rd ed., eq. 2.12). It is 1 for a tiny share and 0 when
the sample is the whole population: expanding a run to 100 % narrows the intervals to the
figures themselves. A full run (100 %) is not a sample of a finite population but of the
models' behaviour, so its intervals are the ordinary ones (`fpc` None).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from valuerank.analysis.output import AnalysisWarning


@dataclass(frozen=True)
class SampleBasis:
    """`scenarios` of `total` (None when unknown, e.g. an imported run without its
    definition) at `percentage` %."""

    percentage: float
    scenarios: int
    total: int | None

    @property
    def sampled(self) -> bool:
        return self.percentage < 100 and (self.total is None or self.scenarios < self.total)

    @property
    def fpc(self) -> float | None:
        """The correction factor, or None when it does not apply (a full run, N unknown)."""
        if not self.sampled:
            return None
        return fpc_of(self.total, self.scenarios)

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
            "Intervals use the finite-population correction; expand the run "
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
