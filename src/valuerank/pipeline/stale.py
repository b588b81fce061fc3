"""Reaping stale runs: a run still `running` (or `summarizing`) with no job queued or running
left, so nothing will ever move it on.

That happens when the job that should have moved the run never ran its last step: a probe
whose last attempt was reaped after its worker died, a `finalize` job that failed for good.
Maintenance (every full pass, see `pipeline/maintenance.py`) moves each such run to the state
the finalize rule gives it (`finalize.close_run`, written once): `completed` when it wrote any
transcript, `failed` with the probes' errors as its reason when it wrote none, and appends a
`run_reaped` event saying so (its webhooks are notified in the same transaction). One
exception: a run that still owes judging or summaries (transcripts without their judge or
summarize jobs) gets its `finalize` job back instead, which does that work and closes the run
properly; only when that job exists already (it ran and failed) is the run closed as it is.

Lives in `pipeline/` because it reuses finalize (runs/ may not import the pipeline). Each run
is handled under its row lock (PostgreSQL) or SQLite's write lock, looked at again first, and
moved by the guarded `move_run`: two passes at once close a run once, with one event.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import exists, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import jobs, runs, transcripts
from valuerank.pipeline.finalize import close_run, ensure_finalize, plain_summary, store_consensus
from valuerank.queue.events import append_event
from valuerank.queue.states import JobStatus
from valuerank.runs.event_names import RUN_REAPED
from valuerank.runs.progress import job_progress
from valuerank.runs.service import JUDGE, PROBE, SUMMARIZE, Run, get_run
from valuerank.runs.states import RunStatus

STALE_STATES = (RunStatus.RUNNING, RunStatus.SUMMARIZING)
LIVE = (JobStatus.QUEUED.value, JobStatus.RUNNING.value)
DEFAULT_LIMIT = 500  # runs per pass: bounds the maintenance transaction
SAMPLE = 20  # run ids kept in the maintenance record
REASON = "no job of the run was queued or running: maintenance closed it"


@dataclass(frozen=True)
class ReapedRun:
    run_id: str
    org_id: str
    previous_status: str
    outcome: str  # completed | failed | resumed (its finalize job enqueued again)
    error: str | None = None


def _live_job(run_id: Any) -> Any:
    return exists().where(jobs.c.partition == run_id, jobs.c.status.in_(LIVE))


async def find_stale_runs(
    conn: AsyncConnection, *, org_id: str | None = None, limit: int = DEFAULT_LIMIT
) -> list[tuple[str, str]]:
    """(org_id, run_id) of runs in a stale state with no queued or running job, oldest id
    first; all organisations unless `org_id`."""
    query = select(runs.c.org_id, runs.c.id).where(
        runs.c.status.in_([s.value for s in STALE_STATES]), ~_live_job(runs.c.id)
    )
    if org_id is not None:
        query = query.where(runs.c.org_id == org_id)
    rows = await conn.execute(query.order_by(runs.c.id).limit(limit))
    return [(str(o), str(r)) for o, r in rows]


async def _locked_status(conn: AsyncConnection, org_id: str, run_id: str) -> RunStatus | None:
    query = select(runs.c.status).where(runs.c.org_id == org_id, runs.c.id == run_id)
    if conn.dialect.name == "postgresql":
        query = query.with_for_update()  # a concurrent pass waits here, then sees the move
    status = await conn.scalar(query)
    return None if status is None else RunStatus(status)


async def owes_followers(conn: AsyncConnection, run: Run) -> bool:
    """A running run whose transcripts do not all have their judge and summarize jobs."""
    per_transcript = len(run.config.judge_models) + (1 if run.config.summary_model else 0)
    if run.status is not RunStatus.RUNNING or per_transcript == 0:
        return False
    written = await conn.scalar(
        select(func.count())
        .select_from(transcripts)
        .where(transcripts.c.org_id == run.org_id, transcripts.c.run_id == run.id)
    )
    followers = (await job_progress(conn, run.id, (JUDGE, SUMMARIZE))).total
    return followers < int(written or 0) * per_transcript


async def reap_stale_run(conn: AsyncConnection, org_id: str, run_id: str) -> ReapedRun | None:
    """Close (or resume) one stale run; None when it is not stale (any more)."""
    status = await _locked_status(conn, org_id, run_id)
    if status not in STALE_STATES:
        return None
    if await conn.scalar(select(_live_job(run_id))):
        return None
    run = await get_run(conn, org_id, run_id)
    if await owes_followers(conn, run) and await ensure_finalize(conn, run):
        return ReapedRun(run.id, org_id, status.value, "resumed")
    results = await store_consensus(conn, run)
    target, moved = await close_run(conn, run, results, plain_summary(results))
    if not moved:
        return None
    error = (await get_run(conn, org_id, run_id)).error
    probes = await job_progress(conn, run.id, (PROBE,))
    await append_event(
        conn,
        org_id=org_id,
        partition=run.id,
        type=RUN_REAPED,
        data={
            "status": target.value,
            "previous_status": status.value,
            "reason": REASON,
            "error": error,
            # done/total as in run_complete (readers end the run's progress with them).
            "probes": {"done": probes.done, **probes.to_dict()},
        },
    )
    return ReapedRun(run.id, org_id, status.value, target.value, error)


async def reap_stale_runs(
    conn: AsyncConnection, *, org_id: str | None = None, limit: int = DEFAULT_LIMIT
) -> dict[str, Any]:
    """Reap every stale run (of `org_id`, or all) in the caller's transaction; the counts and
    a sample of the runs, for the maintenance record."""
    found = await find_stale_runs(conn, org_id=org_id, limit=limit)
    reaped = [
        done
        for org, run_id in found
        if (done := await reap_stale_run(conn, org, run_id)) is not None
    ]
    counts = {
        outcome: sum(1 for r in reaped if r.outcome == outcome)
        for outcome in ("completed", "failed", "resumed")
    }
    return {
        "reaped": counts["completed"] + counts["failed"],
        **counts,
        "runs": [
            {"run_id": r.run_id, "from": r.previous_status, "outcome": r.outcome}
            for r in reaped[:SAMPLE]
        ],
        "more": len(found) >= limit,
    }
