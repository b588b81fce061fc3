"""A run's end, owned here: deciding a run has reached it, making sure its finalize job exists,
closing it with its final status, and recovering a run that nothing would close.

- The tail. Every probe, when it ends, asks `at_tail` (at most TAIL of the run's probes still
  queued or running); those at the tail enqueue the run's one finalize job of its generation
  (`ensure_finalize`, idempotent). A probe that writes its transcript does it in that write's
  transaction (`finalize_at_tail`, from `probe.py`); one that reuses a stored transcript, or
  whose last attempt failed (`handlers.py`), does it after a read (`move_on_at_tail`).
- The finalize job (`finalize.py`) waits out probing, then judging and summaries, and closes
  the run with `close_run`, the finalize rule written once: `completed` if it wrote any
  transcript, else `failed` with the probes' errors.
- A stalled run (`stalled`: running or summarizing, no job queued or running) is moved on by
  maintenance, where writes belong (`reap_stale_runs`: the workers' periodic pass, `valuerank
  maintenance run`, `POST /api/system/queue/maintenance/reap-stale-runs`): closed by
  `close_run` with a `run_reaped` event, or given its finalize job back when it still owes
  judging or summaries. Reading a run's status writes nothing (`runs.progress.read_report`).
- Cancelling is a user's move (`runs.service.cancel_run`, from any open state). `close_run`
  moves a run only from running or summarizing (a guarded UPDATE), so a cancelled run is never
  closed after; rerun and expand reopen a closed run in a new generation, whose finalize job
  is a new one (the old one, if still queued, finds nothing to do).

Light to import (no model calls, no analysis). Lives in `pipeline/` because runs/ may not
import the pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.engine import Database
from valuerank.db.tables import runs, transcripts
from valuerank.pipeline.run_results import plain_summary, store_consensus
from valuerank.queue.events import append_event
from valuerank.queue.partitions import (
    has_live_jobs,
    job_counts,
    live_jobs_exist,
    live_jobs_up_to,
)
from valuerank.queue.states import JobStatus
from valuerank.runs.event_names import RUN_REAPED
from valuerank.runs.finalizing import OPEN, ensure_finalize
from valuerank.runs.kinds import JUDGE, PROBE, SUMMARIZE
from valuerank.runs.progress import job_progress
from valuerank.runs.results import ModelResult
from valuerank.runs.run import Run, get_run
from valuerank.runs.states import RunStatus, move_run
from valuerank.shapes import dump

_OPEN_SOURCES = frozenset(OPEN)

# -- the tail: the last probes enqueue the finalize job --------------------------------------

# Probe jobs still active (besides the caller) at which the tail starts finalize: a few
# concurrent last jobs may each see the others running, so the threshold is not 0.
TAIL = 32


async def at_tail(conn: AsyncConnection, org_id: str, run_id: str) -> bool:
    """Are at most TAIL of the run's probe jobs still queued or running? Every probe asks when
    it ends, so this reads at most 2 × (TAIL + 1) index entries instead of counting the run."""
    return await live_jobs_up_to(conn, org_id, run_id, PROBE, TAIL + 1) <= TAIL


async def finalize_at_tail(conn: AsyncConnection, run: Run) -> bool:
    """At the tail, the run's finalize job, in the caller's (write) transaction: a probe
    checks with its transcript's write, one commit for both. True when this call enqueued it."""
    return await at_tail(conn, run.org_id, run.id) and await ensure_finalize(conn, run)


async def move_on_at_tail(db: Database, org_id: str, run_id: str) -> bool:
    """`finalize_at_tail` for a probe with nothing else to write (a reused transcript, a last
    failed attempt). The check is a read (no write lock on SQLite) and costs the same at any
    run size; only the probes at the tail write. Enqueuing finalize early is harmless (it is
    idempotent, and snoozes while probes are left), so the write does not check again."""
    async with db.transaction() as conn:
        tail = await at_tail(conn, org_id, run_id)
    if not tail:
        return False
    async with db.transaction(immediate=True) as conn:
        return await ensure_finalize(conn, await get_run(conn, org_id, run_id))


# -- a stalled run: open, with no job left that would move it on -----------------------------


async def stalled(conn: AsyncConnection, run: Run) -> bool:
    """A run that should move on but has no job left that would move it."""
    return run.status in OPEN and not await has_live_jobs(conn, run.id, org_id=run.org_id)


# -- closing: the finalize rule ---------------------------------------------------------------

_REASONS_SHOWN = 3


async def failure_reason(conn: AsyncConnection, run_id: str) -> str:
    """Why no probe wrote a transcript, from the failed probes' own last errors (the most
    common first), and where to look."""
    errors = job_counts(run_id, by=("last_error",), kinds=[PROBE], statuses=[JobStatus.FAILED])
    rows = await conn.execute(
        errors.order_by(errors.selected_columns.n.desc(), errors.selected_columns.last_error)
    )
    counted = [(str(error or "no error recorded"), int(n)) for error, n in rows]
    failed = sum(n for _, n in counted)
    if not failed:
        return "no probe job wrote a transcript"
    shown = "; ".join(f"{error} ({n}×)" for error, n in counted[:_REASONS_SHOWN])
    others = len(counted) - _REASONS_SHOWN
    more = f"; and {others} other errors" if others > 0 else ""
    return (
        f"every probe job failed ({failed}): {shown}{more} — see `valuerank queue status` "
        "and `valuerank runs rerun-failed`"
    )


async def close_run(
    conn: AsyncConnection, run: Run, results: list[ModelResult], summary: str
) -> tuple[RunStatus, bool]:
    """The finalize rule, written once (the finalize job and stale-run reaping use it): a run
    that wrote any transcript is `completed` (failed probes are counted in its results), one
    that wrote none is `failed` with the probes' errors as its reason. Moves the run there
    from running or summarizing (guarded), stores its summary and enqueues its analysis;
    returns the target and whether this call moved it (False: someone else moved it first)."""
    # The analysis step loads credentials, the registry and model calls: only a closing run
    # needs it, not the readers of a status who import this module.
    from valuerank.pipeline.analyze import analyze_when_completed

    written = sum(r.transcripts for r in results)
    target = RunStatus.COMPLETED if written else RunStatus.FAILED
    error = None if written else await failure_reason(conn, run.id)
    moved = await move_run(conn, run.org_id, run.id, target, sources=_OPEN_SOURCES, error=error)
    if moved:
        await conn.execute(update(runs).where(runs.c.id == run.id).values(summary=summary))
        await analyze_when_completed(conn, run, target)
    return target, moved


# -- recovery: maintenance reaps stale runs ---------------------------------------------------

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


async def find_stale_runs(
    conn: AsyncConnection, *, org_id: str | None = None, limit: int = DEFAULT_LIMIT
) -> list[tuple[str, str]]:
    """(org_id, run_id) of the stalled runs, oldest id first; all organisations unless
    `org_id`."""
    query = select(runs.c.org_id, runs.c.id).where(
        runs.c.status.in_([s.value for s in OPEN]), ~live_jobs_exist(runs.c.id)
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
    """Close (or resume) one stale run; None when it is not stale (any more). Under the run's
    row lock (PostgreSQL) or SQLite's write lock, looked at again first, and moved by the
    guarded `close_run`: two passes at once close a run once, with one event."""
    if await _locked_status(conn, org_id, run_id) not in OPEN:
        return None
    run = await get_run(conn, org_id, run_id)
    if not await stalled(conn, run):
        return None
    # Judging or summaries still owed: the finalize job does that work and closes the run
    # properly; only when that job exists already (it ran and failed) is the run closed as is.
    if await owes_followers(conn, run) and await ensure_finalize(conn, run):
        return ReapedRun(run.id, org_id, run.status.value, "resumed")
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
            "previous_status": run.status.value,
            "reason": REASON,
            "error": error,
            # done/total as in run_complete (readers end the run's progress with them).
            "probes": {"done": probes.done, **dump(probes)},
        },
    )
    return ReapedRun(run.id, org_id, run.status.value, target.value, error)


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
