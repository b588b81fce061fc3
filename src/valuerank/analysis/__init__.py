"""Statistics on a run's transcripts: pure functions over numpy arrays, no I/O.

`AnalysisInput` holds a run as arrays; `analyze_basic` and `analyze_deep` turn it into the
findings JSON, `compare` pairs two runs; `plots` draws the results. The database side (loading
runs, caching results, jobs) is `valuerank.findings`.

Each name below is imported from its submodule when first used (PEP 562): serving a cached
analysis needs only `CODE_VERSION` (`analysis/version.py`), not scipy and statsmodels, which
importing the statistics costs seconds.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from valuerank.analysis.basic import analyze_basic
    from valuerank.analysis.comparison import compare
    from valuerank.analysis.data import AnalysisInput, ScenarioInfo
    from valuerank.analysis.deep import analyze_deep
    from valuerank.analysis.sampling import SampleBasis
    from valuerank.analysis.version import CODE_VERSION

__all__ = [
    "CODE_VERSION",
    "AnalysisInput",
    "SampleBasis",
    "ScenarioInfo",
    "analyze_basic",
    "analyze_deep",
    "compare",
]

# Exported name → its submodule. (`valuerank.lazy` does this for the other packages; the
# statistics import no other ValueRank package, so the few lines are here.)
_EXPORTS = {
    "CODE_VERSION": "version",
    "AnalysisInput": "data",
    "SampleBasis": "sampling",
    "ScenarioInfo": "data",
    "analyze_basic": "basic",
    "analyze_deep": "deep",
    "compare": "comparison",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value
