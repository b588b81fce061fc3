"""Run lifecycle: create, start, pause, resume, cancel, delete, rerun failed jobs (all or one),
expand.

The service the API, the CLI and the pipeline call: a run's record is in `runs/run.py`, its
planning (expansion and sampling into scenarios) in `runs/planning.py`, its probe jobs in
`runs/probes.py` and the kinds of its jobs in `runs/kinds.py`; this module moves a run
through its states and re-exports the first two, so callers have one door. Every function
takes a connection inside the caller's transaction and is scoped by org.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import runs
from valuerank.errors import ConflictError, InvalidInputError
from valuerank.queue import (
    cancel_partition,
    get_job,
    pause_partition,
    requeue_failed,
    resume_partition,
)
from valuerank.queue.partitions import delete_partitions, has_running_jobs
from valuerank.refs import short_id
from valuerank.runs.config import RunConfig
from valuerank.runs.event_names import RUN_CANCELLED, RUN_PAUSED, RUN_RESUMED
from valuerank.runs.partitions import analysis_partition, run_partitions
from valuerank.runs.planning import (
    CreatedRun,
    ScenarioPlan,
    create_run,
    plan_scenarios,
    run_scenario_ids,
)
from valuerank.runs.probes import enqueue_probes
from valuerank.runs.records import insert_run_scenarios
from valuerank.runs.run import Run, get_run, list_runs, new_cli_run_id, run_from_row
from valuerank.runs.states import TERMINAL, RunStatus, move_run, refuse

__all__ = [
    "DELETABLE",
    "CreatedRun",
    "Run",
    "RunActiveError",
    "ScenarioPlan",
    "Started",
    "cancel_run",
    "create_run",
    "delete_run",
    "expand_run",
    "get_run",
    "list_runs",
    "new_cli_run_id",
    "pause_run",
    "plan_scenarios",
    "reopen_run",
    "rerun_failed",
    "resume_run",
    "retry_failed_job",
    "run_from_row",
    "run_scenario_ids",
    "start_run",
]


@dataclass(frozen=True)
class Started:
    run: Run
    enqueued: int
    existing: int


async def _enqueue_probes(conn: AsyncConnection, run: Run) -> Started:
    added, existing = await enqueue_probes(conn, run)
    return Started(run, added, existing)


# What `start_run` starts (a running or paused run: nothing new); any other is refused.
STARTABLE = frozenset({RunStatus.PENDING, RunStatus.RUNNING, RunStatus.PAUSED})


async def start_run(conn: AsyncConnection, org_id: str, ref: str) -> Started:
    """Enqueue one probe job per (scenario, model, sample). Starting twice adds nothing."""
    run = await get_run(conn, org_id, ref)
    if run.status is RunStatus.PENDING:
        await move_run(conn, org_id, run.id, RunStatus.RUNNING)
    elif run.status not in STARTABLE:
        raise refuse(run.id, run.status, "start")
    started = await _enqueue_probes(conn, run)
    return Started(await get_run(conn, org_id, run.id), started.enqueued, started.existing)


MAX_RUN_NAME = 300  # the column's width


async def rename_run(conn: AsyncConnection, org_id: str, ref: str, name: str) -> Run:
    """Give the run a new name (any state: a name is only what people call it)."""
    run = await get_run(conn, org_id, ref)
    cleaned = " ".join(name.split())  # one line, as lists and pages show it
    if not cleaned:
        raise InvalidInputError("a run's name cannot be empty", hint="give it a few words")
    if len(cleaned) > MAX_RUN_NAME:
        raise InvalidInputError(
            f"a run's name has at most {MAX_RUN_NAME} characters, not {len(cleaned)}"
        )
    await conn.execute(
        update(runs).where(runs.c.org_id == org_id, runs.c.id == run.id).values(name=cleaned)
    )
    return await get_run(conn, org_id, run.id)


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
