"""What the analysis, comparison and experiment routes answer. An analysis keeps the original
worker's camelCase names; its figures (per model, agreement, dimensions…) are documented as
objects here and in docs (they have many shapes, each described by `methodsUsed`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from valuerank.analysis.warning import AnalysisWarning
from valuerank.api.schemas.envelope import Out
from valuerank.api.schemas.runs import RunSummary
from valuerank.findings.comparisons import Comparison, ComparisonItem
from valuerank.pipeline.experiments import Experiment
from valuerank.runs.states import RunStatus


class AnalysisMeta(Out):
    transcripts: int
    decided: int
    judged: int
    models: list[str]
    scenarios: int
    dimensions: list[str]
    values: list[str]
    run_id: str = Field(alias="runId")
    input_hash: str = Field(alias="inputHash")
    cached: bool
    deep_cached: bool | None = Field(
        default=None,
        alias="deepCached",
        description="Only with `?deep=true`: whether `deep` came from the cache (true) or "
        "was queued (false, 202).",
    )


class DeepAnalysis(Out):
    """The deep analysis (`?deep=true`, when it is current)."""

    pca: dict[str, Any]
    outliers: dict[str, Any]
    correlations: dict[str, Any]
    agreement: dict[str, Any]
    bradley_terry: dict[str, Any] = Field(alias="bradleyTerry")
    most_contested_scenarios: list[dict[str, Any]] = Field(alias="mostContestedScenarios")
    methods_used: dict[str, Any] = Field(alias="methodsUsed")
    narrative: str | None = Field(description="What a model wrote about it, when one did.")
    insights: list[Any]
    warnings: list[AnalysisWarning]
    duration_ms: float = Field(alias="durationMs")


class QueuedJob(Out):
    """Work put on the queue: poll the resource it computes."""

    job_id: str
    status: str = Field(description="The job's status: queued, running, succeeded, failed…")
    error: str | None = None


class Analysis(Out):
    """The run's basic analysis (`valuerank analyze RUN --json`), with `deep` when asked:
    the deep analysis when it is current, else the job computing it (answered with 202)."""

    value_sensitivity: dict[str, Any] = Field(
        alias="valueSensitivity",
        description="model → dimension → {value, coefficient, ci95, pValue, n, scenarios, "
        "status}: decision points per unit of the dimension's level score, from the decisions "
        "alone",
    )
    scale_labels: dict[str, str] = Field(
        alias="scaleLabels", description="The definition's scale, decision code → its text."
    )
    per_model: dict[str, Any] = Field(alias="perModel")
    model_agreement: dict[str, Any] = Field(alias="modelAgreement")
    dimension_analysis: dict[str, Any] = Field(alias="dimensionAnalysis")
    most_contested_scenarios: list[dict[str, Any]] = Field(alias="mostContestedScenarios")
    judge_agreement: dict[str, Any] | None = Field(
        alias="judgeAgreement",
        description="How far the judges agree per value (Krippendorff's α, Fleiss' κ), each "
        "judge against the consensus and against people; null when nobody read a transcript",
    )
    robustness: dict[str, Any] = Field(
        description="model → {orderEffect, phrasingEffect, consistency, ranking, reasons}: "
        "whether its choices survive the scale's order and rewording, how consistent they "
        "are, and the uncertainty of its ranking of values (win rates and sensitivities, "
        "rank intervals by scenario bootstrap)"
    )
    visualization_data: dict[str, Any] = Field(alias="visualizationData")
    methods_used: dict[str, Any] = Field(alias="methodsUsed")
    warnings: list[AnalysisWarning]
    meta: AnalysisMeta
    sample: dict[str, Any] | None
    computed_at: datetime = Field(alias="computedAt")
    duration_ms: float = Field(alias="durationMs")
    deep: DeepAnalysis | QueuedJob | None = Field(default=None, description="Only with deep.")


class AnalysisTimings(Out):
    """`?debug=true`: where the read's time went."""

    query_time_ms: float = Field(description="Reading (and storing) in the database.")
    analysis_time_ms: float = Field(description="Computing what the cache did not hold.")
    cache_hit: bool = Field(description="The basic analysis came from the cache.")
    computed: list[str] = Field(description="The kinds computed by this request.")


class QueuedAnalysis(Out):
    job_id: str
    status: str
    run_id: str
    kind: str = Field(description="basic or deep.")


class QueuedComparison(Out):
    comparison_id: str
    status: str
    job_id: str


class ComparisonPage(Out):
    comparisons: list[ComparisonItem]
    count: int
    next_cursor: str | None


class ExperimentPage(Out):
    experiments: list[Experiment]
    count: int
    next_cursor: str | None


class VariantRun(RunSummary):
    experiment_id: str
    changes: dict[str, Any]


class VariantReport(Out):
    run_id: str
    name: str
    status: RunStatus
    changes: dict[str, Any]
    comparison: Comparison | None = Field(description="Null until both runs are finished.")
    cached: bool | None = Field(default=None, description="With a comparison.")
    waiting_for: list[str] | None = Field(
        default=None, description="Without one: the runs not finished yet."
    )


class ExperimentReport(Out):
    """An experiment (`pipeline.experiments.Experiment`'s fields) with its baseline and its
    variants, each compared with the baseline when both are finished."""

    id: str
    name: str
    hypothesis: str
    baseline_run_id: str
    created_at: datetime
    baseline: RunSummary
    variants: list[VariantReport]


class NarrativeAsked(Out):
    model: str
    status: str = Field(
        description="queued, already queued, or exists (the deep analysis has one: not asked)."
    )
    job_id: str | None


class AnalyzedNow(Out):
    """`POST /api/runs/{id}/analysis`: what `valuerank analyze RUN --json` prints (without
    `success`), computed now."""

    cached: bool = Field(description="The basic analysis came from the cache.")
    deep_cached: bool | None = Field(
        description="Whether the deep analysis came from the cache; null when not asked."
    )
    analysis: Analysis
    narrative: NarrativeAsked | None = Field(
        default=None, description="Only with `narrative_model`: the narrative asked for."
    )
    current_deep: DeepAnalysis | None = Field(
        default=None,
        description="Only with `current_deep: true`: the stored deep analysis of the run's "
        "current inputs, or null (e.g. for the PCA plot of a basic analysis).",
    )


class ComparedNow(Out):
    """`POST /api/comparisons`: what `valuerank compare A B --json` prints (without
    `success`)."""

    cached: bool = Field(description="A completed comparison of the same inputs was reused.")
    comparison: Comparison
