"""Run lifecycle: create, start, pause, resume, cancel, delete, rerun failed jobs (all or one),
expand.

A run's jobs live in the queue partition named by the run id: one `probe` job per
(scenario, model, sample), then `judge`/`summarize` jobs per transcript, and one `finalize`
job per generation that moves the run on when a phase is done (see pipeline/finalize.py).
Every function takes a connection inside the caller's transaction and is scoped by org.

The definitions (their store, expansion and sampling) are imported by the two functions that
plan a run's scenarios, not with this module: reading a run (`get_run`, every status and
progress) needs none of them.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import bindparam, delete, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import run_scenarios, runs
from valuerank.errors import ConflictError, InvalidInputError
from valuerank.providers.costs import conversation_tokens, estimate_tokens
from valuerank.providers.model_id import parse_model_id
from valuerank.queue import (
    JobSpec,
    cancel_partition,
    enqueue_many,
    get_job,
    pause_partition,
    requeue_failed,
    resume_partition,
)
from valuerank.queue.dialect import as_utc
from valuerank.queue.partitions import delete_partitions, has_running_jobs
from valuerank.refs import find_by_ref, short_id
from valuerank.runs.config import RunConfig
from valuerank.runs.event_names import RUN_CANCELLED, RUN_PAUSED, RUN_RESUMED
from valuerank.runs.partitions import analysis_partition, run_partitions
from valuerank.runs.records import NewRun, RunScenario, insert_run, insert_run_scenarios
from valuerank.runs.states import TERMINAL, RunStatus, move_run, refuse

PROBE = "probe"
JUDGE = "judge"
SUMMARIZE = "summarize"
FINALIZE = "finalize"
# The seed's names of two of these kinds (seeds/api-queue-system.md), accepted wherever a kind
# is named (filters, CLI options) and read as ours; jobs are stored under our names.
SEED_KIND_NAMES = {"probe:scenario": PROBE, "summarize:run": SUMMARIZE}


def job_kind(name: str) -> str:
    """Our name of a job kind given under our name or the seed's."""
    return SEED_KIND_NAMES.get(name.strip(), name.strip())


@dataclass(frozen=True)
class Run:
    id: str
    org_id: str
    definition_id: str | None
    name: str
    cli_run_id: str
    status: RunStatus
    config: RunConfig
    priority: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    summary: str | None
    error: str | None
    origin: str
    synthetic: bool
    rubric_id: str | None = None

    def summary_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "status": self.status.value,
            "definition_id": self.definition_id,
            "models": list(self.config.models),
            "sample_percentage": self.config.sample_percentage,
            "sample_seed": self.config.sample_seed,
            "phrasings": self.config.phrasings,
            "scale_order": self.config.scale_order,
            "cli_run_id": self.cli_run_id,
            "origin": self.origin,
            "synthetic": self.synthetic,
            "created_at": as_utc(self.created_at).isoformat(),
        }


def run_from_row(row: Any) -> Run:
    return Run(
        id=row.id,
        org_id=row.org_id,
        definition_id=row.definition_id,
        name=row.name,
        cli_run_id=row.cli_run_id,
        status=RunStatus(row.status),
        config=RunConfig.model_validate(row.config),
        priority=row.priority,
        created_at=row.created_at,
        started_at=row.started_at,
        finished_at=row.finished_at,
        summary=row.summary,
        error=row.error,
        origin=row.origin,
        synthetic=row.synthetic,
        rubric_id=row.rubric_id,
    )


# A run by its whole id, built once: every probe job reads its run (a prefix goes the long way).
_RUN_BY_ID = select(runs).where(runs.c.org_id == bindparam("org_id"), runs.c.id == bindparam("id"))


async def get_run(conn: AsyncConnection, org_id: str, ref: str) -> Run:
    row = None
    if "\x00" not in ref:  # PostgreSQL refuses it in any string (find_by_ref says not found)
        row = (await conn.execute(_RUN_BY_ID, {"org_id": org_id, "id": ref})).first()
    if row is None:
        row = await find_by_ref(conn, runs, org_id, ref, kind="run", listing="runs")
    return run_from_row(row)


async def list_runs(conn: AsyncConnection, org_id: str, *, limit: int = 100) -> list[Run]:
    rows = await conn.execute(
        select(runs)
        .where(runs.c.org_id == org_id)
        .order_by(runs.c.created_at.desc(), runs.c.id.desc())  # the API's order too
        .limit(limit)
    )
    return [run_from_row(row) for row in rows]


def new_cli_run_id() -> str:
    """A run id in one of the CLI's forms (YYYYMMDD-HHMMSS-NNNN), unique enough to tell runs
    apart in exported file names."""
    now = datetime.now(UTC)
    return f"{now:%Y%m%d-%H%M%S}-{secrets.randbelow(10_000):04d}"


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


def probe_item_key(scenario_id: str, model: str, sample: int) -> str:
    return f"{PROBE}:{scenario_id}:{model}:{sample}"


# Tokens of one follow-up prompt, for rate-limit reservations only (the CLI's `ranked_list`
# prompt is ~1,300 characters); the queue corrects every reservation with the real usage.
FOLLOWUP_TOKENS_ESTIMATE = 330


def conversation_estimate(config: RunConfig, body: str) -> int:
    """Tokens one probe conversation may use: what a rate bucket reserves before the call."""
    prompt = estimate_tokens(f"{config.preamble}\n\n{body}")
    input_tokens, output_tokens = conversation_tokens(
        1 + config.followup_turns,
        prompt,
        config.max_tokens,
        FOLLOWUP_TOKENS_ESTIMATE if config.followup_turns else 0,
        estimate_tokens(config.system_prompt or ""),
    )
    return input_tokens + output_tokens


def probe_specs(run: Run, scenarios: Sequence[tuple[str, str]]) -> list[JobSpec]:
    """One probe job per (scenario, model, sample); `scenarios` are (id, body) pairs."""
    return [
        JobSpec(
            kind=PROBE,
            org_id=run.org_id,
            payload={
                "run_id": run.id,
                "scenario_id": sid,
                "model": model,
                "sample": k,
                "estimated_tokens": conversation_estimate(run.config, body),
            },
            partition=run.id,
            item_key=probe_item_key(sid, model, k),
            priority=run.priority,
            provider=parse_model_id(model).provider,
            model=model,
        )
        for sid, body in scenarios
        for model in run.config.models
        for k in range(run.config.samples_per_scenario)
    ]


@dataclass(frozen=True)
class Started:
    run: Run
    enqueued: int
    existing: int


async def _enqueue_probes(conn: AsyncConnection, run: Run) -> Started:
    rows = await conn.execute(
        select(run_scenarios.c.scenario_id, run_scenarios.c.content)
        .where(run_scenarios.c.run_id == run.id)
        .order_by(run_scenarios.c.position)
    )
    scenarios = [(sid, str(content.get("body", ""))) for sid, content in rows]
    results = await enqueue_many(conn, probe_specs(run, scenarios))
    added = sum(1 for r in results if r.enqueued)
    return Started(run, added, len(results) - added)


async def start_run(conn: AsyncConnection, org_id: str, ref: str) -> Started:
    """Enqueue one probe job per (scenario, model, sample). Starting twice adds nothing."""
    run = await get_run(conn, org_id, ref)
    if run.status is RunStatus.PENDING:
        await move_run(conn, org_id, run.id, RunStatus.RUNNING)
    elif run.status not in (RunStatus.RUNNING, RunStatus.PAUSED):
        raise refuse(run.id, run.status, "start")
    started = await _enqueue_probes(conn, run)
    return Started(await get_run(conn, org_id, run.id), started.enqueued, started.existing)


async def pause_run(conn: AsyncConnection, org_id: str, ref: str) -> Run:
    """Stop claiming the run's jobs; running ones finish, nothing is lost."""
    run = await get_run(conn, org_id, ref)
    if run.status is RunStatus.PAUSED:
        return run
    if not await move_run(conn, org_id, run.id, RunStatus.PAUSED):
        return await _moved_by_another(conn, run, RunStatus.PAUSED, "pause")
    await pause_partition(conn, org_id, run.id, event=RUN_PAUSED)
    return await get_run(conn, org_id, run.id)


async def resume_run(conn: AsyncConnection, org_id: str, ref: str) -> Run:
    run = await get_run(conn, org_id, ref)
    if run.status is RunStatus.RUNNING:
        return run
    if not await move_run(conn, org_id, run.id, RunStatus.RUNNING, sources=_PAUSED):
        return await _moved_by_another(conn, run, RunStatus.RUNNING, "resume")
    await resume_partition(conn, org_id, run.id, event=RUN_RESUMED)
    return await get_run(conn, org_id, run.id)


_PAUSED = frozenset({RunStatus.PAUSED})


async def _moved_by_another(conn: AsyncConnection, run: Run, target: RunStatus, action: str) -> Run:
    """The run as it is after a move that changed no row: a concurrent request that moved it
    to `target` first made this one a repeat, answered like a sequential repeat (the run as it
    is); any other state refuses the action, naming that state."""
    current = await get_run(conn, run.org_id, run.id)
    if current.status is not target:
        raise refuse(run.id, current.status, action)
    return current


async def cancel_run(conn: AsyncConnection, org_id: str, ref: str) -> Run:
    """Queued jobs cancelled now; running ones stop at their next heartbeat."""
    run = await get_run(conn, org_id, ref)
    if run.status is RunStatus.CANCELLED:
        return run
    if not await move_run(conn, org_id, run.id, RunStatus.CANCELLED):
        return await _moved_by_another(conn, run, RunStatus.CANCELLED, "cancel")
    await cancel_partition(conn, org_id, run.id, event=RUN_CANCELLED)
    return await get_run(conn, org_id, run.id)


class RunActiveError(ConflictError):
    code = "RUN_ACTIVE"


# What `DELETE /api/queue/runs/{id}` (only_stopped) accepts: runs not under way.
DELETABLE = frozenset({RunStatus.PENDING, *TERMINAL})


async def delete_run(
    conn: AsyncConnection, org_id: str, ref: str, *, only_stopped: bool = False
) -> str:
    """Delete a run and all its data (its jobs and its analyses' jobs, their events,
    scenarios, transcripts, judgments).

    A run with running jobs must be cancelled first, so no worker writes into a deleted run.
    `only_stopped` (the API's policy) also refuses a run that is running, paused or
    summarizing, whatever its jobs are doing: cancel it, then delete it.
    """
    run = await get_run(conn, org_id, ref)
    if only_stopped and run.status not in DELETABLE:
        raise RunActiveError(
            f"run {short_id(run.id)} is {run.status.value}: cancel it before deleting it",
            hint="POST /api/queue/runs/{id}/cancel, then delete it",
        )
    if await has_running_jobs(conn, run.id, org_id=org_id):
        raise refuse(run.id, run.status, "delete a run whose jobs are running (cancel it first)")
    if await has_running_jobs(conn, analysis_partition(run.id), org_id=org_id):
        raise refuse(run.id, run.status, "delete a run while it is being analysed (wait for it)")
    # Its partitions go with it: jobs, their errors, events, counters and controls.
    await delete_partitions(conn, org_id, run_partitions(run.id))
    await conn.execute(delete(runs).where(runs.c.org_id == org_id, runs.c.id == run.id))
    return run.id


async def _next_generation(conn: AsyncConnection, run: Run) -> Run:
    config = run.config.model_copy(update={"generation": run.config.generation + 1})
    await conn.execute(
        update(runs)
        .where(runs.c.org_id == run.org_id, runs.c.id == run.id)
        .values(config=config.to_json())
    )
    return await get_run(conn, run.org_id, run.id)


async def _reopen(conn: AsyncConnection, run: Run) -> Run:
    if run.status in TERMINAL or run.status is RunStatus.SUMMARIZING:
        await move_run(conn, run.org_id, run.id, RunStatus.RUNNING, sources=_REOPENABLE)
        await resume_partition(conn, run.org_id, run.id, event=RUN_RESUMED)
    return await _next_generation(conn, run)


_REOPENABLE = frozenset({*TERMINAL, RunStatus.SUMMARIZING})


async def reopen_run(conn: AsyncConnection, run: Run) -> Run:
    """A closed run running again in a new generation (judging it again: pipeline/rejudge.py)."""
    return await _reopen(conn, run)


async def rerun_failed(conn: AsyncConnection, org_id: str, ref: str) -> tuple[Run, int]:
    """Send the run's failed jobs back to the queue with fresh attempts; reopen the run."""
    run = await get_run(conn, org_id, ref)
    if run.status is RunStatus.PENDING:
        raise refuse(run.id, run.status, "rerun failed jobs of a run never started")
    requeued = await requeue_failed(conn, org_id, partition=run.id)
    if requeued:
        run = await _reopen(conn, run)
    return run, len(requeued)


async def retry_failed_job(conn: AsyncConnection, org_id: str, job_id: str) -> Run | None:
    """Send one failed job back to the queue with fresh attempts. A job of a run (its probes,
    judges, summaries, finalize) reopens the run as `rerun_failed` does; returns that run.
    NOT_FOUND for another organisation's job, INVALID_TRANSITION unless it failed."""
    job = await get_job(conn, job_id, org_id=org_id)
    row = (
        await conn.execute(select(runs).where(runs.c.org_id == org_id, runs.c.id == job.partition))
    ).first()
    run = None if row is None else run_from_row(row)
    if run is not None and run.status is RunStatus.PENDING:
        raise refuse(run.id, run.status, "retry a job of a run never started")
    await requeue_failed(conn, org_id, job_id=job.id)
    return None if run is None else await _reopen(conn, run)


async def expand_run(
    conn: AsyncConnection, org_id: str, ref: str, sample_percentage: float
) -> tuple[Run, int]:
    """Grow a sampled run: the nested sample at the larger percentage holds the smaller one, so
    only the scenarios it adds are enqueued. Returns (run, scenarios added)."""
    run = await get_run(conn, org_id, ref)
    if run.definition_id is None:
        raise InvalidInputError("an imported run without its definition cannot be expanded")
    if sample_percentage <= run.config.sample_percentage:
        # The request is well formed; the run's state (its sample) is what stands in the way.
        raise ConflictError(
            f"the run already covers {run.config.sample_percentage:g}% of the scenarios",
            hint="give a larger --sample-percentage",
        )
    config = run.config.model_copy(update={"sample_percentage": sample_percentage})
    RunConfig.model_validate(config.to_json())  # range check of the new percentage
    plan, _ = await plan_scenarios(conn, org_id, run.definition_id, config)
    added = await insert_run_scenarios(conn, org_id, run.id, plan.chosen)
    # The sample percentage is an analysis input too, even when no scenario was added.
    await conn.execute(
        update(runs)
        .where(runs.c.org_id == org_id, runs.c.id == run.id)
        .values(config=config.to_json(), inputs_version=runs.c.inputs_version + 1)
    )
    run = await get_run(conn, org_id, run.id)
    if run.status is not RunStatus.PENDING and added:
        run = await _reopen(conn, run)
        await _enqueue_probes(conn, run)
    return run, added
