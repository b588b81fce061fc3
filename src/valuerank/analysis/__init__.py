"""Statistics on a run's transcripts: pure functions over numpy arrays, no I/O.

`AnalysisInput` holds a run as arrays; `analyze_basic` and `analyze_deep` turn it into the
findings JSON, `compare` pairs two runs; `plots` draws the results. The database side (loading
runs, caching results, jobs) is `valuerank.findings`.
"""

from valuerank.analysis.basic import CODE_VERSION, analyze_basic
from valuerank.analysis.comparison import compare
from valuerank.analysis.data import AnalysisInput, ScenarioInfo
from valuerank.analysis.deep import analyze_deep
from valuerank.analysis.sampling import SampleBasis

__all__ = [
    "CODE_VERSION",
    "AnalysisInput",
    "SampleBasis",
    "ScenarioInfo",
    "analyze_basic",
    "analyze_deep",
    "compare",
]
