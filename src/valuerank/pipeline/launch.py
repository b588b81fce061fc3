"""Creating a run as users do it: check credentials, freeze scenarios, estimate, start."""

from __future__ import annotations

import os
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.credentials.store import require_credentials
from valuerank.db.tables import run_scenarios
from valuerank.default_rubric import JudgeRubric, rubric_for_judges
from valuerank.formats.followups import DEFAULT_FOLLOWUPS
from valuerank.org_defaults import get_org_defaults
from valuerank.pipeline.judging import JUDGE_MAX_TOKENS, SUMMARY_MAX_TOKENS, run_rubric
from valuerank.pipeline.prompts import first_prompt, judge_messages, summary_messages
from valuerank.providers.costs import (
    JUDGE_ROLE,
    SUMMARY_ROLE,
    FollowerCalls,
    ModelPrice,
    RunCostEstimate,
    estimate_message_tokens,
    estimate_run_cost,
    estimate_tokens,
)
from valuerank.registry.check import check_models
from valuerank.registry.service import prices_for, seed_models
from valuerank.runs.answer_sizes import learned_answer_sizes
from valuerank.runs.config import RunConfig
from valuerank.runs.estimates import followup_tokens
from valuerank.runs.service import CreatedRun, Run, Started, create_run, start_run
from valuerank.shapes import dump


async def _priced(conn: AsyncConnection, models: Sequence[str]) -> list[ModelPrice]:
    priced = []
    for model in models:
        prices = await prices_for(conn, model)
        priced.append(ModelPrice(model, *(prices if prices is not None else (None, None))))
    return priced


async def estimate_cost(conn: AsyncConnection, run: Run) -> RunCostEstimate:
    """The run's cost before it starts: its prompts' sizes, each model's answers sized as in
    the organisation's earlier runs of this definition version where it has some, else at
    max_tokens (an upper bound), registry prices; a model without a price is reported, never
    counted as free.
    Each judge reads, and the summary model summarises, every transcript: their prompt and
    the transcript at its largest (every answer at max_tokens), their answers at their own
    max_tokens. (The run's one narrative call is left out.)"""
    config = run.config
    bodies = (
        await conn.execute(select(run_scenarios.c.content).where(run_scenarios.c.run_id == run.id))
    ).scalars()
    sizes = [estimate_tokens(first_prompt(config.preamble, str(c["body"]))) for c in bodies]
    followups = len(DEFAULT_FOLLOWUPS[: config.followup_turns])
    prompt_tokens = round(statistics.fmean(sizes)) if sizes else 0
    per_followup = followup_tokens(config.followup_turns)
    turns = 1 + followups
    transcript_tokens = prompt_tokens + followups * per_followup + turns * config.max_tokens
    followers = []
    if config.judge_models:
        instructions = estimate_message_tokens(judge_messages("", await run_rubric(conn, run)))
        followers.append(
            FollowerCalls(
                JUDGE_ROLE,
                await _priced(conn, config.judge_models),
                instructions + transcript_tokens,
                JUDGE_MAX_TOKENS,
            )
        )
    if config.summary_model is not None:
        instructions = estimate_message_tokens(summary_messages("", None))
        followers.append(
            FollowerCalls(
                SUMMARY_ROLE,
                await _priced(conn, [config.summary_model]),
                instructions + transcript_tokens,
                SUMMARY_MAX_TOKENS,
            )
        )
    learned = await learned_answer_sizes(
        conn, run.org_id, run.definition_id, config.models, except_run=run.id
    )
    return estimate_run_cost(
        prompts=len(sizes),
        models=await _priced(conn, config.models),
        samples=config.samples_per_scenario,
        turns=turns,
        prompt_tokens=prompt_tokens,
        output_tokens_per_turn=config.max_tokens,
        followup_tokens=per_followup,
        system_tokens=estimate_tokens(config.system_prompt or ""),
        followers=followers,
        learned=learned,
    )


@dataclass(frozen=True)
class Launched:
    created: CreatedRun
    estimate: RunCostEstimate
    started: Started | None
    rubric: JudgeRubric | None = None  # what the judges read (None: the run has no judges)
    defaults_used: tuple[str, ...] = ()  # "judges", "summary_model": the organisation's

    def to_dict(self) -> dict[str, Any]:
        run = self.started.run if self.started else self.created.run
        return {
            **run.summary_dict(),
            "scenarios": self.created.scenarios,
            "total_scenarios": self.created.total_scenarios,
            "jobs": self.created.jobs_planned,
            "enqueued": self.started.enqueued if self.started else 0,
            "estimate": self.estimate.to_dict(),
            "rubric": None if self.rubric is None else dump(self.rubric),
            "judge_models": list(run.config.judge_models),
            "summary_model": run.config.summary_model,
            "defaults_used": list(self.defaults_used),
        }


async def launch_run(
    conn: AsyncConnection,
    org_id: str,
    definition_ref: str,
    config: RunConfig,
    *,
    name: str = "",
    priority: int = 0,
    start: bool = True,
    environ: Mapping[str, str] | None = None,
    allow_unknown_models: bool = False,
    use_org_defaults: bool = True,
) -> Launched:
    """Create (and by default start) a run. A model that cannot be served (unknown provider,
    persona or file, not in the registry unless `allow_unknown_models`) or a provider without
    a key fails here, before anything is written — never later as a run whose jobs all fail.
    A run naming no judges (or no summary model) gets the organisation's defaults, unless
    `use_org_defaults` is False.
    """
    config, used = (
        await with_org_defaults(conn, org_id, config) if use_org_defaults else (config, ())
    )
    models = [*config.models, *config.judge_models]
    if config.summary_model:
        models.append(config.summary_model)
    await seed_models(conn)  # the registry the check reads; adds only what is missing
    await check_models(conn, models, allow_unknown=allow_unknown_models)
    await require_credentials(
        conn, org_id, models, environ=os.environ if environ is None else environ
    )
    # Judges always read a rubric (the default when the organisation has none): without one
    # they name values freely, rarely agree, and every value win rate comes out empty.
    rubric = await rubric_for_judges(conn, org_id, store=True) if config.judge_models else None
    created = await create_run(
        conn,
        org_id,
        definition_ref,
        config,
        name=name,
        priority=priority,
        rubric_id=None if rubric is None else rubric.id,
    )
    estimate = await estimate_cost(conn, created.run)
    started = await start_run(conn, org_id, created.run.id) if start else None
    return Launched(created, estimate, started, rubric, used)


async def with_org_defaults(
    conn: AsyncConnection, org_id: str, config: RunConfig
) -> tuple[RunConfig, tuple[str, ...]]:
    """The config with the organisation's default judges and summary model where it names
    none, and which of the two were used."""
    defaults = await get_org_defaults(conn, org_id)
    update: dict[str, Any] = {}
    used: list[str] = []
    if not config.judge_models and defaults.judge_models:
        update.update(judge_models=defaults.judge_models, default_judges=True)
        used.append("judges")
    if config.summary_model is None and defaults.summary_model is not None:
        update["summary_model"] = defaults.summary_model
        used.append("summary_model")
    return config.model_copy(update=update), tuple(used)
