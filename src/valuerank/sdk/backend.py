"""What the Python API asks of a store, answered the same by a local database and a server.

Every answer is JSON-ready data, exactly as the server's API answers it (`normalised`: a local
answer goes through the same JSON encoding), so the results and dataframes built from them do
not depend on where they came from.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol


def normalised(data: Any) -> Any:
    """`data` as it reads after a trip through JSON (tuples become lists, keys strings)."""
    return json.loads(json.dumps(data, allow_nan=False))


@dataclass(frozen=True)
class Table:
    """A run's table: its columns (formats/run_table.py) and its rows."""

    columns: list[str]
    rows: list[dict[str, Any]]


class Backend(Protocol):
    def definitions(self, limit: int) -> list[dict[str, Any]]: ...
    def definition(self, ref: str) -> dict[str, Any]: ...
    def runs(self, limit: int) -> list[dict[str, Any]]: ...
    def run(self, ref: str) -> dict[str, Any]: ...
    def table(self, run_id: str, *, with_text: bool) -> Table: ...
    def analysis(self, run_id: str) -> dict[str, Any]: ...
    def transcript(self, transcript_id: str) -> dict[str, Any]: ...
    def compare(self, baseline: str, other: str, timeout: float) -> dict[str, Any]: ...
    def close(self) -> None: ...
