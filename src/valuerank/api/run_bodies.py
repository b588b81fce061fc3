"""The body that creates a run, shared by `POST /api/queue/runs` and `POST /api/eval/runs`:
the settings of `valuerank runs create`, checked as the CLI checks them."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, ConfigDict, Field
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.api.fields import Body, WholeNumber, whole_number
from valuerank.api.limits import MAX_JSON_TEXT
from valuerank.pipeline.launch import launch_run
from valuerank.providers.model_id import MODEL_ID_PATTERN
from valuerank.queue.enqueue import MAX_PRIORITY, MIN_PRIORITY, priority_value
from valuerank.runs.config import build_config

ModelId = Annotated[str, Field(min_length=1, max_length=300, pattern=MODEL_ID_PATTERN)]


class RunSettingsBody(Body):
    """The settings of `valuerank runs create` (defaults the same)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    definition_id: str = Field(min_length=1, max_length=100, description="Version id or prefix.")
    models: list[ModelId] = Field(min_length=1, max_length=100, description="`provider:model`.")
    judges: list[ModelId] = Field(default_factory=list, max_length=20)
    summary_model: ModelId | None = None
    sample_percentage: float | None = None
    sample_seed: WholeNumber | None = Field(
        default=None, description="Default: a random one, stored."
    )
    samples_per_scenario: WholeNumber | None = None
    phrasings: Literal["first", "all", "random"] = Field(
        default="first",
        description="Wordings of each sampled level combination: its levels' first options, "
        "every option, or one seeded option per level (`scenarios expand --mode`).",
    )
    scale_order: Literal["as-written", "reversed", "both"] = Field(
        default="as-written",
        description="The scale's numbered lines as written, reversed (decisions mapped back), "
        "or both (every scenario asked twice, the reversed one as `<id>-reversed`).",
    )
    temperature: float | None = None
    max_tokens: WholeNumber | None = None
    followup_turns: WholeNumber | None = None
    system_prompt: str | None = Field(default=None, max_length=MAX_JSON_TEXT)
    reuse_cache: bool = False
    name: str = Field(default="", max_length=300)
    # The bounds on the int itself (then the float), so the schema keeps them.
    priority: (
        Annotated[int, Field(ge=MIN_PRIORITY, le=MAX_PRIORITY), BeforeValidator(whole_number)] | str
    ) = Field(default="normal", description="low, normal, high or a number.")
    allow_unknown_models: bool = Field(
        default=False, description="Models the registry does not know (a known provider's)."
    )
    use_default_judges: bool = Field(
        default=True,
        description="Without `judges` (or `summary_model`), use the organisation's defaults.",
    )


class NewRunBody(RunSettingsBody):
    start: bool = Field(default=True, description="False: create it pending, start it later.")


async def launch_from_body(
    conn: AsyncConnection, org_id: str, body: RunSettingsBody, *, start: bool
) -> dict[str, Any]:
    """`launch_run` with the body's settings (INVALID_INPUT names every bad setting)."""
    config = build_config(
        models=tuple(body.models),
        judge_models=tuple(body.judges),
        summary_model=body.summary_model,
        sample_percentage=body.sample_percentage,
        sample_seed=body.sample_seed,
        samples_per_scenario=body.samples_per_scenario,
        phrasings=body.phrasings,
        scale_order=body.scale_order,
        temperature=body.temperature,
        max_tokens=body.max_tokens,
        followup_turns=body.followup_turns,
        system_prompt=body.system_prompt,
        reuse_cache=body.reuse_cache,
    )
    launched = await launch_run(
        conn,
        org_id,
        body.definition_id,
        config,
        name=body.name,
        priority=priority_value(body.priority),
        start=start,
        allow_unknown_models=body.allow_unknown_models,
        use_org_defaults=body.use_default_judges,
    )
    return launched.to_dict()
