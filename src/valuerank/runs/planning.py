"""Planning a run: the definition expanded and sampled into the run's scenarios, frozen in
with the run's config when it is created.

The definitions (their store, expansion and sampling) are imported by the two functions that
plan a run's scenarios, not with this module: reading a run needs none of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import run_scenarios
from valuerank.errors import InvalidInputError
from valuerank.providers.model_id import parse_model_id
from valuerank.runs.config import RunConfig
from valuerank.runs.records import NewRun, RunScenario, insert_run, insert_run_scenarios
from valuerank.runs.run import Run, get_run, new_cli_run_id


def _is_synthetic(models: Sequence[str]) -> bool:
    return any(parse_model_id(m).provider == "scripted" for m in models)


@dataclass(frozen=True)
class ScenarioPlan:
    """The run scenarios (presentations) a sampling percentage selects, in sampling rank
    order; `total`: how many the whole definition has in the run's phrasings and orders."""

    chosen: list[RunScenario]
    total: int


async def plan_scenarios(
    conn: AsyncConnection, org_id: str, definition_id: str, config: RunConfig
) -> tuple[ScenarioPlan, str]:
    """Expand the definition and take the nested sample of its level combinations (the first
    k mode-first scenarios in rank order), each asked in every phrasing of the run's mode and
    every scale order it asks for, so comparisons are paired. SCALE_NOT_REVERSIBLE when a
    reversed order is asked of a scale without numbered lines."""
    from valuerank.definitions.expansion import expand_with_scores
    from valuerank.definitions.presentation import orders_of, presented_id, reverse_scale
    from valuerank.definitions.sampling import rank_order, sample_size
    from valuerank.definitions.service import get_definition

    stored = await get_definition(conn, org_id, definition_id)
    if config.sample_seed is None:
        raise InvalidInputError("the run has no sample seed (it was created without one)")
    first = expand_with_scores(stored.definition)
    combinations = list(first.scenarios)
    ranked = rank_order(combinations, config.sample_seed)
    k = sample_size(len(combinations), config.sample_percentage)
    phrased = first
    if config.phrasings != "first":
        phrased = expand_with_scores(stored.definition, config.phrasings, config.sample_seed)
    phrasings: dict[str, list[Any]] = {}
    for combo, scenario in zip(phrased.combinations, phrased.scenarios, strict=True):
        phrasings.setdefault(combo.combination_id, []).append(scenario)
    orders = orders_of(config.scale_order)
    scores = phrased.dimension_scores
    chosen: list[RunScenario] = []
    for first_phrasing in ranked[:k]:
        for s in phrasings[first_phrasing.id]:
            content = s.to_mapping()
            for order in orders:
                shown = content
                if order == "reversed":
                    shown = {**content, "body": reverse_scale(str(content["body"]))}
                chosen.append(
                    RunScenario(
                        scenario_id=presented_id(s.id, order),
                        position=len(chosen),
                        content=shown,
                        dimension_scores=scores.get(s.id, {}),
                    )
                )
    total = len(phrased.scenarios) * len(orders)
    return ScenarioPlan(chosen=chosen, total=total), stored.definition.preamble


@dataclass(frozen=True)
class CreatedRun:
    run: Run
    scenarios: int
    total_scenarios: int
    jobs_planned: int


async def create_run(
    conn: AsyncConnection,
    org_id: str,
    definition_ref: str,
    config: RunConfig,
    *,
    name: str = "",
    priority: int = 0,
    rubric_id: str | None = None,
) -> CreatedRun:
    """A pending run of a definition version with its sampled scenarios frozen in; a sample
    asked for without a seed gets a random one, stored in the run's config."""
    from valuerank.definitions.sampling import draw_seed
    from valuerank.definitions.service import get_definition

    if config.sample_seed is None:
        config = config.model_copy(update={"sample_seed": draw_seed()})
    stored = await get_definition(conn, org_id, definition_ref)
    plan, preamble = await plan_scenarios(conn, org_id, stored.version.id, config)
    if not plan.chosen:
        raise InvalidInputError(f"definition {stored.version.name} expands to no scenario")
    config = config.model_copy(update={"preamble": preamble})
    run_id = await insert_run(
        conn,
        org_id,
        NewRun(
            definition_id=stored.version.id,
            config=config.to_json(),
            name=name or f"{stored.version.name} {stored.version.version_label}",
            priority=priority,
            rubric_id=rubric_id,
            cli_run_id=new_cli_run_id(),
            synthetic=_is_synthetic(config.models),
        ),
    )
    await insert_run_scenarios(conn, org_id, run_id, plan.chosen)
    run = await get_run(conn, org_id, run_id)
    planned = len(plan.chosen) * len(config.models) * config.samples_per_scenario
    return CreatedRun(run, len(plan.chosen), plan.total, planned)


async def run_scenario_ids(conn: AsyncConnection, run_id: str) -> list[str]:
    rows = await conn.execute(
        select(run_scenarios.c.scenario_id)
        .where(run_scenarios.c.run_id == run_id)
        .order_by(run_scenarios.c.position)
    )
    return list(rows.scalars())
