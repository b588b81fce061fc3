"""What the run, queue and eval routes answer (see `envelope.py` for how they are used):
a run's summary, pages of runs, failures and dead jobs, its events, a launch. A run's
report, detail, list item, breakdown and failures, a dead job and the queue's status are
shapes of their own (`valuerank.shapes`), defined where they are built (`runs/`,
`api/views.py`, `pipeline/dead_jobs.py`, `queue/status.py`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from valuerank.api.schemas.envelope import Out
from valuerank.api.views import RunItem
from valuerank.default_rubric import JudgeRubric
from valuerank.pipeline.dead_jobs import DeadJob
from valuerank.runs.breakdown import Failure
from valuerank.runs.states import RunStatus


class RunSummary(Out):
    """Who a run is (`Run.summary_dict`)."""

    id: str
    name: str
    status: RunStatus
    definition_id: str | None
    models: list[str]
    sample_percentage: float
    sample_seed: int | None
    phrasings: Literal["first", "all", "random"] = Field(
        description="Wordings asked of each sampled level combination (expansion mode)."
    )
    scale_order: Literal["as-written", "reversed", "both"] = Field(
        description="Scale orders asked; a reversed presentation's id ends in `-reversed` and "
        "its decisions are stored mapped back to the definition's direction."
    )
    cli_run_id: str
    origin: str = Field(description="created, imported, restored…")
    synthetic: bool = Field(description="True when its answers come from scripted models.")
    created_at: datetime


class RunPage(Out):
    runs: list[RunItem]
    count: int
    next_cursor: str | None


class FailurePage(Out):
    failures: list[Failure]
    count: int
    next_cursor: str | None


class DeadJobPage(Out):
    jobs: list[DeadJob]
    count: int
    next_cursor: str | None


class RetriedJob(Out):
    job_id: str
    status: Literal["queued"]
    run: RunSummary | None = Field(description="The run the job belongs to, reopened.")


class RunEvent(Out):
    seq: int
    type: str = Field(description="task_complete, task_failed, run_complete, run_paused…")
    data: dict[str, Any]
    created_at: datetime


class EventPage(Out):
    run_id: str
    status: RunStatus
    terminal: bool
    events: list[RunEvent]
    after: int
    next_after: int = Field(description="Pass it back as `after` for the next page.")
    has_more: bool


class ModelCost(Out):
    model: str
    role: Literal["probe", "judge", "summary"] = Field(
        description="probe: answers the scenarios; judge: reads each transcript; summary: "
        "writes each transcript's rationale."
    )
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    learned_from: int = Field(
        description="Earlier transcripts of this definition version whose answers sized this "
        "model's (0: every answer counted at its max tokens)."
    )


class CostEstimate(Out):
    upper_bound: bool = Field(
        description="True when every answer is counted at its max tokens (the run cannot cost "
        "more); false when some models' answers are sized as in earlier runs."
    )
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None = Field(description="None when a model's price is unknown.")
    known_cost_usd: float
    unknown_price_models: list[str]
    models: list[ModelCost]


class LaunchedRun(RunSummary):
    scenarios: int
    total_scenarios: int
    jobs: int = Field(description="Probe jobs planned.")
    enqueued: int = Field(description="Jobs put on the queue now (0 for a pending run).")
    estimate: CostEstimate
    rubric: JudgeRubric | None = Field(
        description="The rubric the judges will read; null for a run without judges."
    )
    judge_models: list[str] = Field(description="The run's judges (empty: none).")
    summary_model: str | None
    defaults_used: list[Literal["judges", "summary_model"]] = Field(
        description="What the run took from the organisation's defaults (it named none)."
    )


class StartedRun(RunSummary):
    enqueued: bool = Field(description="True when this call put jobs on the queue.")
    jobs_enqueued: int
    reopened: bool


class ExpandedRun(RunSummary):
    scenarios_added: int


class RequeuedRun(RunSummary):
    requeued: int


class JudgedRun(RunSummary):
    """A finished run judged again (`pipeline.rejudge.Rejudged`)."""

    judge_models: list[str] = Field(description="The run's judges now.")
    added: list[str] = Field(description="Judges the run did not have.")
    removed: list[str] = Field(description="Judges no longer listed (with `replace`).")
    judgments_removed: int = Field(description="The removed judges' judgments, deleted.")
    enqueued: int = Field(description="Judge jobs put on the queue (no probe: no target asked).")


class DeletedRun(Out):
    id: str
    deleted: Literal[True]


class QueuePaused(Out):
    paused: bool
    changed: bool = Field(description="False when it was in that state already.")


class TranscriptItem(Out):
    """A transcript in a list (its text: `GET /api/transcripts/{id}`)."""

    id: str
    run_id: str
    scenario_id: str
    model: str
    sample_index: int
    decision_code: int | None = Field(description="1–5; null: refused or unparseable.")
    decision_reason: str | None
    rationale: str | None
    consensus: Any = Field(description="The judges' consensus, when judged.")
    input_tokens: int
    output_tokens: int
    latency_ms: float
    cost_usd: float | None
    finish_reason: str | None
    synthetic: bool
    cached: bool
    created_at: datetime
    answer_preview: str = Field(
        description="The first answer's opening on one line (at most 140 characters)."
    )


class TranscriptPage(Out):
    transcripts: list[TranscriptItem]
    count: int
    total: int = Field(
        description=(
            "How many transcripts match the filters (on every page), at most 10,000, or 1,000 "
            "with a text search or a filter on the judges' consensus."
        ),
    )
    total_exact: bool = Field(description="False when more than `total` transcripts match.")
    next_cursor: str | None
