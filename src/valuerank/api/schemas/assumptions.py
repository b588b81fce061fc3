"""What /api/assumptions answers: the seed's multi-model view and task consensus (their
fields as `multi-model-validation-api.md` names them), pages of tasks and RA tags, a recorded
validation. A task, an RA tag, a validation, a validation request and the validator models
are shapes of their own (`valuerank.shapes`), defined where they are built (`validation/`)."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from valuerank.api.schemas.envelope import Out
from valuerank.consensus.consensus import AgreementLevel
from valuerank.validation.model import RaTag, Task, Validation
from valuerank.validation.rules import Consensus, TagSummary


class MultiModelView(Out):
    task_id: int
    ra_tag_id: str
    consensus: Consensus
    validations: list[Validation]
    model_count: int
    task_name: str
    ra_tag_text: str
    generated_at: datetime
    cached: bool = Field(description="As the seed shows it; the envelope's `cached` too.")


class OverallConsensus(Out):
    consensus: float
    agreement_level: AgreementLevel
    total_tags: int
    total_validations: int
    tags_with_validations: int


class TaskConsensus(Out):
    task_id: int
    task_name: str
    overall_consensus: OverallConsensus
    ra_tag_summaries: list[TagSummary]
    contentious_tags: list[str]
    high_confidence_tags: list[str]
    generated_at: datetime
    cached: bool


class ReadTimings(Out):
    """`?debug=true`: where the read's time went."""

    query_time_ms: float
    cache_hit: bool
    models_queried: int
    consensus_calculation_time_ms: float


class TaskPage(Out):
    tasks: list[Task]
    count: int
    next_cursor: str | None


class TagPage(Out):
    tags: list[RaTag]
    count: int
    next_cursor: str | None


class RecordedValidation(Out):
    validation: Validation
    consensus: Consensus = Field(description="The tag's consensus with it counted.")


class ValidationJob(Out):
    model: str | None = Field(description="The validator the job asks.")
    status: str = Field(description="queued, running, succeeded, failed or cancelled.")
    error: str | None = Field(description="Why it failed (its last error), if it did.")


class ValidationJobs(Out):
    """`GET /api/assumptions/jobs`: the state of the jobs a validation request queued."""

    jobs: dict[str, ValidationJob] = Field(description="job id → its state.")
