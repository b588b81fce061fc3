"""The Python API's results: typed views of the API's answers.

Each holds the answer as the API sends it (`data`, JSON-ready; its shape is the API's, see
/openapi.json and docs/api.md: nothing here defines an answer a second time) and names its
most used fields with their types. A run also reads its table (`decisions_df`,
`transcripts_df`) and its analysis (`analysis`, `analysis_df`) through the client it came
from, on a local database or a server alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from valuerank.sdk.client import Client


def _when(value: Any) -> datetime | None:
    return datetime.fromisoformat(str(value)) if value else None


@dataclass(frozen=True)
class DefinitionInfo:
    """A definition version (`GET /api/definitions/{id}`, or an item of the list)."""

    data: dict[str, Any] = field(repr=False)

    @property
    def id(self) -> str:
        return str(self.data["id"])

    @property
    def name(self) -> str:
        return str(self.data["name"])

    @property
    def version_label(self) -> str:
        return str(self.data["version_label"])

    @property
    def created_at(self) -> datetime | None:
        return _when(self.data.get("created_at"))

    @property
    def content(self) -> str | None:
        """The CLI's `.md` text (a version read alone; the list leaves it out)."""
        found = self.data.get("content")
        return None if found is None else str(found)

    def __repr__(self) -> str:
        return f"DefinitionInfo(id={self.id!r}, name={self.name!r}, label={self.version_label!r})"


@dataclass(frozen=True)
class TranscriptInfo:
    """One transcript (`GET /api/transcripts/{id}`): its markdown, turns and judgments."""

    data: dict[str, Any] = field(repr=False)

    @property
    def id(self) -> str:
        return str(self.data["id"])

    @property
    def model(self) -> str:
        return str(self.data["model"])

    @property
    def scenario_id(self) -> str:
        return str(self.data["scenario_id"])

    @property
    def decision(self) -> int | None:
        found = self.data.get("decision_code")
        return None if found is None else int(found)

    @property
    def content(self) -> str:
        return str(self.data.get("content") or "")

    @property
    def judgments(self) -> list[dict[str, Any]]:
        return list(self.data.get("judgments") or [])

    def __repr__(self) -> str:
        return f"TranscriptInfo(id={self.id!r}, model={self.model!r}, decision={self.decision!r})"


@dataclass(frozen=True)
class RunAnalysis:
    """A run's analysis (`valuerank analyze RUN --json`'s `analysis`; docs/analysis.md)."""

    data: dict[str, Any] = field(repr=False)

    @property
    def value_sensitivity(self) -> dict[str, dict[str, Any]]:
        return dict(self.data.get("valueSensitivity") or {})

    @property
    def per_model(self) -> dict[str, dict[str, Any]]:
        return dict(self.data.get("perModel") or {})

    @property
    def warnings(self) -> list[dict[str, Any]]:
        return list(self.data.get("warnings") or [])

    def to_df(self) -> pd.DataFrame:
        """Value sensitivities and win rates, a row each (see `RunInfo.analysis_df`)."""
        from valuerank.sdk.frames import analysis_frame

        return analysis_frame(self.data)

    def __repr__(self) -> str:
        meta = self.data.get("meta") or {}
        return f"RunAnalysis(run={meta.get('runId')!r}, transcripts={meta.get('transcripts')!r})"


@dataclass(frozen=True)
class RunComparison:
    """Two runs compared on scenario identity (`GET /api/comparisons/{id}`)."""

    data: dict[str, Any] = field(repr=False)

    @property
    def id(self) -> str:
        return str(self.data["id"])

    @property
    def status(self) -> str:
        return str(self.data["status"])

    @property
    def result(self) -> dict[str, Any] | None:
        found = self.data.get("result")
        return None if found is None else dict(found)

    def __repr__(self) -> str:
        return f"RunComparison(id={self.id!r}, status={self.status!r})"


@dataclass(frozen=True)
class RunInfo:
    """A run (`GET /api/runs/{id}`: status, progress, cost) and what can be read of it."""

    data: dict[str, Any] = field(repr=False)
    client: Client = field(repr=False, compare=False)

    @property
    def id(self) -> str:
        return str(self.data["id"])

    @property
    def name(self) -> str:
        return str(self.data["name"])

    @property
    def status(self) -> str:
        return str(self.data["status"])

    @property
    def models(self) -> list[str]:
        return [str(m) for m in self.data.get("models") or []]

    @property
    def definition_id(self) -> str | None:
        found = self.data.get("definition_id")
        return None if found is None else str(found)

    @property
    def transcripts(self) -> int:
        return int(self.data.get("transcripts") or 0)

    @property
    def cost_usd(self) -> float:
        return float(self.data.get("cost_usd") or 0.0)

    @property
    def created_at(self) -> datetime | None:
        return _when(self.data.get("created_at"))

    def refresh(self) -> RunInfo:
        """The run as it is now."""
        return self.client.run(self.id)

    def table(self, *, with_text: bool = False) -> tuple[list[str], list[dict[str, Any]]]:
        """The run's table as plain rows: (columns, rows), without pandas."""
        found = self.client.backend.table(self.id, with_text=with_text)
        return found.columns, found.rows

    def decisions_df(self) -> pd.DataFrame:
        """A row per transcript: model, scenario, each dimension's level (`dim.<Name>`),
        phrasing, scale order, decision, refusal, the judges' consensus and each judge's
        values (`judge.<model>.…`), tokens, cost, latency (docs/notebooks.md)."""
        from valuerank.sdk.frames import table_frame

        return table_frame(*self.table())

    def transcripts_df(self) -> pd.DataFrame:
        """`decisions_df` with each transcript's first answer, turn count and rationale."""
        from valuerank.sdk.frames import table_frame

        return table_frame(*self.table(with_text=True))

    def analysis(self) -> RunAnalysis:
        """The run's analysis (computed, or served from the cache while its inputs match)."""
        return RunAnalysis(self.client.backend.analysis(self.id))

    def analysis_df(self) -> pd.DataFrame:
        """Value sensitivities (per model and dimension) and win rates (per model and
        value), a row each: `measure` says which."""
        return self.analysis().to_df()

    def __repr__(self) -> str:
        return f"RunInfo(id={self.id!r}, name={self.name!r}, status={self.status!r})"
