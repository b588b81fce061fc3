"""What the matrix and side-by-side routes answer (findings/matrix.py says how it is computed)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from valuerank.api.schemas.envelope import Out
from valuerank.formats.transcript_md import Turn
from valuerank.runs.states import RunStatus


class RunBrief(Out):
    id: str
    name: str
    status: RunStatus
    definition_id: str | None


class MatrixColumn(Out):
    index: int
    run_id: str
    model: str
    mean: float | None = Field(description="Mean of the column's scenario means.")
    odd: int = Field(description="Scenarios where this column is the odd one out.")


class MatrixDimension(Out):
    name: str
    value: str = Field(description="The value at stake the dimension stands for.")
    levels: dict[str, str] = Field(description="Level score → label, from the definition.")


class MatrixCell(Out):
    n: int = Field(description="Transcripts (samples).")
    decided: int
    undecided: int = Field(description="Transcripts without a decision (refused, unreadable).")
    mean: float | None = Field(description="Mean decision over the decided ones.")
    counts: dict[str, int] = Field(description="Decision code (1–5) → transcripts.")
    transcript_ids: list[str] = Field(description="By sample index.")


class MatrixRow(Out):
    scenario_id: str
    name: str
    levels: dict[str, float] = Field(description="Dimension → level score.")
    disagreement: float | None = Field(
        description="Range of the columns' means (max − min); null with fewer than two."
    )
    sd: float | None = Field(description="Population SD of the columns' means.")
    differ: bool = Field(description="disagreement ≥ threshold.")
    split: bool = Field(description="Some column's mean is below 3 and another's above.")
    odd_one_out: int | None = Field(description="Index of the column farthest from the rest.")
    cells: list[MatrixCell] = Field(description="One per column, in the columns' order.")


class MatrixPair(Out):
    a: int
    b: int
    shared: int = Field(description="Scenarios both columns decided.")
    mean_gap: float | None = Field(description="Mean |mean a − mean b| over those.")
    differ: int = Field(description="Of those, how many with a gap ≥ threshold.")


class RunMatrix(Out):
    runs: list[RunBrief]
    basis: Literal["model", "judges"]
    threshold: float
    sort: str
    show: Literal["all", "differ", "split"]
    columns: list[MatrixColumn]
    dimensions: list[MatrixDimension]
    scale: dict[str, str] = Field(description="Decision code → the template's label.")
    scenarios: int = Field(description="Rows in the matrix before `show` filters them.")
    differ: int = Field(description="Rows where the columns differ.")
    split: int = Field(description="Rows split across the scale's midpoint.")
    rows: list[MatrixRow]
    pairs: list[MatrixPair]


class JudgeReading(Out):
    judge_model: str
    decision: int | None
    confidence: float
    prioritized_values: list[str]
    deprioritized_values: list[str]
    rationale: str
    vote: str | None = Field(description="validated, partial or rejected in the consensus.")
    created_at: datetime


class AnswerTranscript(Out):
    id: str
    sample_index: int
    decision_code: int | None
    decision_reason: str | None
    rationale: str | None
    turns: list[Turn]
    consensus: Any = Field(description="The judges' consensus, when judged.")
    judgments: list[JudgeReading]


class AnswerColumn(Out):
    run_id: str
    model: str
    mean: float | None = Field(description="Mean decision of its transcripts.")
    judged_mean: float | None = Field(description="Mean of the judges' agreed decisions.")
    transcripts: list[AnswerTranscript]


class ScenarioBrief(Out):
    id: str
    name: str
    body: str = Field(description="The scenario's text as the run sent it.")
    levels: dict[str, float]


class ScenarioAnswers(Out):
    runs: list[RunBrief]
    scenario: ScenarioBrief
    columns: list[AnswerColumn]
