"""What the lineage results and the leaderboard of a definition answer (findings/lineage.py
and findings/leaderboard.py say how they are computed). The comparisons inside lineage
results are `POST /api/runs/compare`'s results (camelCase, documented as objects there)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from valuerank.api.schemas.envelope import Out


class LineageVersionRun(Out):
    id: str
    name: str
    status: str
    created_at: datetime
    models: list[str] = Field(description="The models the run was started with.")


class ModelMean(Out):
    transcripts: int
    decided: int
    mean: float | None = Field(description="Mean decision over the decided transcripts.")


class LineageVersion(Out):
    definition_id: str
    parent_id: str | None
    label: str
    depth: int = Field(description="Below the root (0).")
    relation: Literal["this", "ancestor", "descendant", "other branch"] = Field(
        description="Where the version stands to the one asked about."
    )
    runs: list[LineageVersionRun] = Field(description="Every run of the version, oldest first.")
    representative_run_id: str | None = Field(description="The run chosen for the version.")
    chosen_by: Literal["explicit", "latest_completed"] | None = Field(
        description="Asked for with `run`, or the default: the latest completed run."
    )
    no_run_reason: str | None = Field(description="Why no run represents the version.")
    models_answered: list[str] = Field(
        description="The models with transcripts in the chosen run (all of them, compared or not)."
    )
    results: dict[str, ModelMean] | None = Field(
        default=None, description="Per compared model; only when a run represents the version."
    )
    sample: dict[str, Any] | None = Field(default=None, description="The chosen run's sample.")
    basis: str | None = Field(default=None, description="What the results rest on, in words.")


class MissingFrom(Out):
    definition_id: str
    label: str
    run_id: str


class DroppedModel(Out):
    model: str
    missing_from: list[MissingFrom] = Field(description="The chosen runs without the model.")
    reason: str


class LineageModels(Out):
    compared: list[str] = Field(description="The models every chosen run answered.")
    dropped: list[DroppedModel] = Field(description="The others, and which runs lack each.")


class LineageChange(Out):
    from_: str = Field(alias="from", description="The nearest ancestor with a chosen run.")
    to: str
    from_label: str
    to_label: str
    from_run: str
    to_run: str
    diff: dict[str, Any] = Field(description="The definition diff between the two versions.")
    diff_lines: list[str]
    comparison: dict[str, Any] = Field(description="The two runs compared (compared models).")


class AlignedScenario(Out):
    scenario_id: str = Field(alias="scenarioId")
    versions: dict[str, dict[str, float]] = Field(
        description="Version id → model → mean decision on the scenario."
    )


class LineageEmpty(Out):
    """Why a table is empty (null: it is not)."""

    models: str | None
    changes: str | None
    aligned: str | None


class LineageResults(Out):
    """The whole fork tree of a definition version, one run per version."""

    definition_id: str = Field(description="The version asked about.")
    root_id: str
    name: str
    label: str
    models: LineageModels
    versions: list[LineageVersion] = Field(description="Depth first from the root.")
    changes: list[LineageChange]
    aligned: list[AlignedScenario]
    empty: LineageEmpty


class LeaderboardCell(Out):
    win_rate: float | None = Field(description="Null without a decisive verdict.")
    lower: float | None = Field(description="The 95% interval (scenario-clustered Wilson).")
    upper: float | None
    prioritized: int
    deprioritized: int
    neutral: int
    runs: int = Field(description="Runs with judged transcripts of the model naming the value.")
    transcripts: int = Field(description="Those judged transcripts.")
    scenarios: int = Field(description="Scenarios with a decisive verdict: the units.")


class LeaderboardRow(Out):
    model: str
    runs: int = Field(description="Completed runs with transcripts of the model.")
    transcripts: int
    judged: int
    values: dict[str, LeaderboardCell | None] = Field(
        description="Value → its cell; null where no run of the model could judge the value."
    )


class LeaderboardRun(Out):
    id: str
    name: str
    definition_id: str
    label: str
    created_at: datetime
    transcripts: int
    judged: int
    models: list[str]


class Leaderboard(Out):
    """Models × values over every completed run of the definition's tree."""

    definition_id: str
    root_id: str
    name: str
    label: str
    method: str
    how: str = Field(description="How the runs are pooled, in words.")
    level: float
    sort: str
    values: list[str]
    models: list[LeaderboardRow]
    runs: list[LeaderboardRun] = Field(description="The completed runs pooled, oldest first.")
    empty: str | None = Field(description="Why the board is empty (null: it is not).")
