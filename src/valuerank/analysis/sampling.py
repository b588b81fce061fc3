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
        if not self.sampled or self.total is None or self.total <= 1:
            return None
        n = min(self.scenarios, self.total)
        return math.sqrt((self.total - n) / (self.total - 1))

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
