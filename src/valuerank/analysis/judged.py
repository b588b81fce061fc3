"""Whether a judged run's judges produced any value, and why not (pure; no I/O).

Value win rates need the judges' consensus to name values. A run whose judges ran but whose
consensus names none has `values: {}` for every model; this says so, with the reason: no
rubric (judges then name values freely and rarely agree), a rubric that defines no value, or
judges that returned none although the rubric offered them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from valuerank.analysis.warning import AnalysisWarning

if TYPE_CHECKING:  # data.py imports RubricBasis from here
    from valuerank.analysis.data import AnalysisInput

NO_VALUES_JUDGED = "NO_VALUES_JUDGED"


@dataclass(frozen=True)
class RubricBasis:
    """The values rubric the run's judges read: its name, version label and value count."""

    name: str
    version_label: str
    values: int

    @property
    def label(self) -> str:
        return f"{self.name} {self.version_label}"


def values_judged(data: AnalysisInput) -> bool:
    """True when the consensus of some judged transcript prioritised or deprioritised a value."""
    if data.value_status.size == 0:
        return False
    return bool(np.any(data.value_status[data.judged] != 0))


def judged_value_warnings(data: AnalysisInput) -> list[AnalysisWarning]:
    """NO_VALUES_JUDGED when judges ran on the run but no value was judged in any transcript."""
    if not data.judged.any() or values_judged(data):
        return []
    judged = int(data.judged.sum())
    rubric = data.rubric
    if rubric is None:
        reason = (
            "the run has no values rubric, so its judges named values freely and their "
            "consensus agreed on none"
        )
        fix = (
            "Create a new run with judges: it reads your organisation's newest rubric, or the "
            "default rubric (valuerank-default) when there is none; import your own with "
            "`valuerank rubrics import FILE.yaml`"
        )
    elif rubric.values == 0:
        reason = f"its values rubric {rubric.label} defines no values"
        fix = (
            "Import a rubric with values (`valuerank rubrics import FILE.yaml`) and create a new "
            "run with judges"
        )
    else:
        reason = (
            f"the judges returned no values (or never agreed on one) although the rubric "
            f"{rubric.label} offered {rubric.values}"
        )
        fix = (
            "Read what the judges answered in a few of the run's transcripts (the web UI's "
            "/transcripts?run=RUN); try other judge models"
        )
    return [
        AnalysisWarning(
            NO_VALUES_JUDGED,
            f"{judged} transcript{' was' if judged == 1 else 's were'} judged but no value was "
            f"judged in any of them: {reason}",
            f"Value win rates are empty. {fix}",
        )
    ]
