"""What a run asks for, stored as `runs.config` (JSON) and frozen when the run is created."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from valuerank.definitions.presentation import RunScaleOrder
from valuerank.definitions.sampling import MAX_SEED
from valuerank.errors import InvalidInputError
from valuerank.providers.model_id import InvalidModelId, parse_model_id


class RunConfig(BaseModel):
    """A run's settings. Defaults follow the CLI (`runtime_config` of its run manifest)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    models: tuple[str, ...] = Field(min_length=1)
    sample_percentage: float = Field(default=100.0, gt=0, le=100)
    # None until the run is created: `create_run` draws one then (and it is shown and stored).
    sample_seed: int | None = Field(default=None, ge=0, le=MAX_SEED)
    samples_per_scenario: int = Field(default=1, ge=1, le=100)
    temperature: float | None = Field(default=0.0, ge=0, le=2)
    max_tokens: int = Field(default=1000, ge=1, le=100_000)
    # How many of the follow-up prompts (pipeline.prompts) come after the scenario prompt.
    followup_turns: int = Field(default=1, ge=0, le=10)
    system_prompt: str | None = None
    # The definition's preamble as it was when the run was created.
    preamble: str = ""
    judge_models: tuple[str, ...] = ()
    # True when the judges are the organisation's defaults (org_defaults.py), not named.
    default_judges: bool = False
    # The model writing per-transcript rationales and the run's narrative; None: no summaries.
    summary_model: str | None = None
    reuse_cache: bool = False
    # How each sampled level combination is asked (definitions/presentation.py): in the
    # phrasings of this expansion mode (expansion.ExpansionMode, not imported: reading a run
    # needs no definition code), and in these scale orders.
    phrasings: Literal["first", "all", "random"] = "first"
    scale_order: RunScaleOrder = "as-written"
    # Bumped by rerun-failed and expand, so the run's finalize job can be enqueued again.
    generation: int = 0

    @field_validator("models", "judge_models")
    @classmethod
    def _model_ids(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for model in value:
            try:
                parse_model_id(model)
            except InvalidModelId as exc:
                raise ValueError(str(exc)) from exc
        if len(set(value)) != len(value):
            raise ValueError("a model is listed twice")
        return value

    @field_validator("summary_model")
    @classmethod
    def _summary_model(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                parse_model_id(value)
            except InvalidModelId as exc:
                raise ValueError(str(exc)) from exc
        return value

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def build_config(**fields: Any) -> RunConfig:
    """A run's settings from user input (None: the default); INVALID_INPUT naming every
    problem (the CLI's options and the API's body say the same thing)."""
    try:
        return RunConfig(**{k: v for k, v in fields.items() if v is not None})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'config'}: {e['msg']}" for e in exc.errors()
        )
        raise InvalidInputError(f"invalid run settings: {problems}") from None
