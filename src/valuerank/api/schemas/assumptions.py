"""What /api/assumptions answers: the seed's multi-model view and task consensus (their
fields as `multi-model-validation-api.md` names them), the validator models, tasks, RA tags,
recorded validations and validation requests."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from valuerank.api.schemas.envelope import Out
from valuerank.consensus.consensus import AgreementLevel, Outcome


class Consensus(Out):
    """The seed's consensus object; `no_data` (no outcome, 0.0) before any validation."""

    consensus: float = Field(description="0..1, three decimals.")
    outcome: Outcome | None = Field(description="null: no data.")
    agreement_level: AgreementLevel
    model_disagreement: bool
    total_validations: int
    disagreement_reasons: list[str] = Field(
        description="low_consensus, conflicting_outcomes, confidence_spread."
    )
    confidence_spread: float


class Validation(Out):
    id: int
    task_id: int
    ra_tag_id: str
    outcome: Outcome
    confidence: float = Field(description="0..100.")
    validator_id: str
    notes: str
    validated_at: datetime
    model_name: str | None
    model_version: str | None
    model_category: str | None
    model_weight: float
    source: str = Field(description="How it was recorded: api, model…")


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


class TagSummary(Out):
    ra_tag_id: str
    ra_tag_text: str
    consensus: Consensus
    top_models: list[str]


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


class ValidatorModel(Out):
    id: str
    name: str
    version: str
    provider: str
    category: str
    capabilities: list[str]
    weight: float
    active: bool
    description: str


class ValidatorModels(Out):
    """The whole registry in one answer (not paginated: it holds tens of models)."""

    models: list[ValidatorModel]
    total_models: int
    active_models: int
    last_updated: datetime | None


class Task(Out):
    id: int
    name: str
    description: str
    tag_count: int
    created_at: datetime


class TaskPage(Out):
    tasks: list[Task]
    count: int
    next_cursor: str | None


class RaTag(Out):
    task_id: int
    id: str
    text: str
    tag_type: str | None = Field(description="e.g. COMPLETION_DRIVE_IMPL (from `#TYPE:`).")
    position: int
    created_at: datetime


class TagPage(Out):
    tags: list[RaTag]
    count: int
    next_cursor: str | None


class RecordedValidation(Out):
    validation: Validation
    consensus: Consensus = Field(description="The tag's consensus with it counted.")


class QueuedValidation(Out):
    model: str
    job_id: str
    enqueued: bool = Field(description="False: this model was asked already in this round.")


class ValidationRequest(Out):
    task_id: int
    ra_tag_id: str
    request_id: str | None
    jobs: list[QueuedValidation]
    enqueued: int
