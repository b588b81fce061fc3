"""Experiments: a hypothesis, a baseline run, and variants that each state what they change.

A variant is a new run created from the baseline's settings with the stated changes applied
(`models`, `definition_id` — another definition version —, `temperature`,
`sample_percentage`, `sample_seed`, …) and started like any run. The report compares every
variant with the baseline (findings/comparisons.py) once both have finished; until then it
says what the variant is waiting for.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from pydantic import Field, ValidationError
from pydantic.dataclasses import dataclass as pydantic_dataclass
from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.engine import Database
from valuerank.db.tables import experiment_variants, experiments
from valuerank.errors import InvalidInputError
from valuerank.findings.keyset import newest_first
from valuerank.pipeline.launch import launch_run
from valuerank.queue.ids import new_id
from valuerank.refs import find_by_ref
from valuerank.runs.config import RunConfig
from valuerank.runs.service import Run, get_run
from valuerank.runs.states import RunStatus
from valuerank.shapes import SHAPE, Timestamp, dump

# What a variant may change, and the run setting each change sets.
CHANGEABLE = (
    "models",
    "definition_id",
    "temperature",
    "sample_percentage",
    "sample_seed",
    "samples_per_scenario",
    "max_tokens",
    "followup_turns",
    "system_prompt",
    "judge_models",
    "summary_model",
)
MAX_NAME = 300
MAX_HYPOTHESIS = 10_000


@pydantic_dataclass(frozen=True, config=SHAPE)
class Experiment:
    """An experiment: a hypothesis and the baseline run its variants face (an answer shape:
    the API and `analyze experiments --json` write it, /openapi.json documents it)."""

    id: str
    org_id: Annotated[str, Field(exclude=True)]
    name: str
    hypothesis: str
    baseline_run_id: str
    created_at: Timestamp


@dataclass(frozen=True)
class Variant:
    experiment_id: str
    run: Run
    changes: dict[str, Any]
    created_at: datetime


def _experiment(row: Any) -> Experiment:
    return Experiment(
        id=row.id,
        org_id=row.org_id,
        name=row.name,
        hypothesis=row.hypothesis,
        baseline_run_id=row.baseline_run_id,
        created_at=row.created_at,
    )


def _text(value: Any, name: str, limit: int, *, required: bool) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise InvalidInputError(f"{name} must be a non-empty string")
    if len(value) > limit:
        raise InvalidInputError(f"{name} is longer than {limit} characters")
    return value.strip()


async def create_experiment(
    conn: AsyncConnection, org_id: str, *, name: str, hypothesis: str, baseline_run: str
) -> Experiment:
    name = _text(name, "name", MAX_NAME, required=True)
    hypothesis = _text(hypothesis, "hypothesis", MAX_HYPOTHESIS, required=False)
    run = await get_run(conn, org_id, baseline_run)
    experiment_id = new_id()
    await conn.execute(
        insert(experiments).values(
            id=experiment_id,
            org_id=org_id,
            name=name,
            hypothesis=hypothesis,
            baseline_run_id=run.id,
        )
    )
    return await get_experiment(conn, org_id, experiment_id)


async def get_experiment(conn: AsyncConnection, org_id: str, ref: str) -> Experiment:
    row = await find_by_ref(
        conn, experiments, org_id, ref, kind="experiment", listing="experiments"
    )
    return _experiment(row)


async def list_experiments(
    conn: AsyncConnection, org_id: str, *, limit: int, after: tuple[str, str] | None = None
) -> list[Experiment]:
    """Newest first; `limit + 1` rows for a keyset page."""
    query = select(experiments).where(experiments.c.org_id == org_id)
    rows = await conn.execute(newest_first(query, experiments, conn.dialect.name, limit, after))
    return [_experiment(r) for r in rows]


async def variants(conn: AsyncConnection, experiment: Experiment) -> list[Variant]:
    rows = await conn.execute(
        select(experiment_variants)
        .where(
            experiment_variants.c.org_id == experiment.org_id,
            experiment_variants.c.experiment_id == experiment.id,
        )
        .order_by(experiment_variants.c.created_at, experiment_variants.c.run_id)
    )
    return [
        Variant(
            experiment.id,
            await get_run(conn, experiment.org_id, r.run_id),
            dict(r.changes),
            r.created_at,
        )
        for r in rows
    ]


def variant_config(baseline: RunConfig, changes: dict[str, Any]) -> RunConfig:
    """The baseline's settings with `changes` applied (validated like any run's)."""
    if not isinstance(changes, dict) or not changes:
        raise InvalidInputError(
            "a variant must state what it changes",
            hint=f'give changes such as {{"models": [...]}}; changeable: {", ".join(CHANGEABLE)}',
        )
    unknown = sorted(set(changes) - set(CHANGEABLE))
    if unknown:
        raise InvalidInputError(
            f"cannot change {', '.join(unknown)}", hint=f"changeable: {', '.join(CHANGEABLE)}"
        )
    settings = {k: v for k, v in changes.items() if k != "definition_id"}
    merged = {**baseline.to_json(), **settings, "generation": 0, "preamble": ""}
    try:
        return RunConfig.model_validate(merged)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'changes'}: {e['msg']}" for e in exc.errors()
        )
        raise InvalidInputError(f"invalid changes: {problems}") from None


def describe(changes: dict[str, Any]) -> str:
    return ", ".join(
        f"{k}={'+'.join(v) if isinstance(v, list) else v}" for k, v in sorted(changes.items())
    )


async def add_variant(
    conn: AsyncConnection,
    org_id: str,
    experiment_ref: str,
    changes: dict[str, Any],
    *,
    start: bool = True,
) -> Variant:
    """Create (and start) the variant run: the baseline with `changes` applied."""
    experiment = await get_experiment(conn, org_id, experiment_ref)
    baseline = await get_run(conn, org_id, experiment.baseline_run_id)
    config = variant_config(baseline.config, changes)
    definition = changes.get("definition_id") or baseline.definition_id
    if definition is None:
        raise InvalidInputError(
            "the baseline run has no definition (imported?)",
            hint='state the definition version to run: {"definition_id": ...}',
        )
    if not isinstance(definition, str):
        raise InvalidInputError("definition_id must be a definition version id")
    launched = await launch_run(
        conn,
        org_id,
        definition,
        config,
        name=f"{experiment.name}: {describe(changes)}"[:MAX_NAME],
        priority=baseline.priority,
        start=start,
    )
    run = launched.started.run if launched.started else launched.created.run
    stored = dict(changes)
    if "definition_id" in stored:
        stored["definition_id"] = run.definition_id  # the resolved id, not a prefix
    await conn.execute(
        insert(experiment_variants).values(
            org_id=org_id, experiment_id=experiment.id, run_id=run.id, changes=stored
        )
    )
    return Variant(experiment.id, run, stored, run.created_at)


def _ready(run: Run) -> bool:
    return run.status in (RunStatus.COMPLETED, RunStatus.CANCELLED, RunStatus.FAILED)


async def experiment_report(db: Database, org_id: str, ref: str) -> dict[str, Any]:
    """The experiment, its variants and each variant compared with the baseline."""
    # Here, not at the top: the statistics take seconds to import (see pipeline/analyze.py).
    from valuerank.findings.comparisons import compare_runs

    async with db.transaction() as conn:
        experiment = await get_experiment(conn, org_id, ref)
        baseline = await get_run(conn, org_id, experiment.baseline_run_id)
        found = await variants(conn, experiment)
    report = []
    for variant in found:
        entry: dict[str, Any] = {
            "run_id": variant.run.id,
            "name": variant.run.name,
            "status": variant.run.status.value,
            "changes": variant.changes,
            "comparison": None,
        }
        if _ready(baseline) and _ready(variant.run):
            outcome = await compare_runs(db, org_id, baseline.id, variant.run.id)
            entry["comparison"] = dump(outcome.comparison)
            entry["cached"] = outcome.cached
        else:
            waiting = [r.id for r in (baseline, variant.run) if not _ready(r)]
            entry["waiting_for"] = waiting
        report.append(entry)
    return {
        **dump(experiment),
        "baseline": baseline.summary_dict(),
        "variants": report,
    }
