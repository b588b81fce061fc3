"""The Python API: `valuerank.Client`, on a local database or a server, with typed results
and pandas dataframes (docs/notebooks.md).

`from valuerank import Client` loads this package; nothing here imports pandas, the database
stack or the statistics until a call needs them, so `import valuerank` stays instant.
"""

from valuerank.sdk.client import Client
from valuerank.sdk.results import (
    DefinitionInfo,
    RunAnalysis,
    RunComparison,
    RunInfo,
    TranscriptInfo,
)

__all__ = [
    "Client",
    "DefinitionInfo",
    "RunAnalysis",
    "RunComparison",
    "RunInfo",
    "TranscriptInfo",
]
