"""What a run keeps of its jobs when maintenance prunes them (queue/prune.py, past the job
retention): their counts per kind and status in `runs.pruned_jobs`, and the failed ones, as the
failure listing shows them, in `pruned_failures`. `runs.progress` and `runs.breakdown` read
live and pruned together, so a run's report is the same before and after pruning.

Recorded when jobs are pruned, not when the run finishes: a cancelled run's running jobs
finish later, and a reopened run's failed jobs run again, so a count taken at the finish goes
stale. A job is live or pruned, never both (it moves in the pruning transaction), hence the
rule for a run reopened after pruning (`rerun-failed`, retrying a job): its live failed jobs
run again; a pruned failure stays one of the run's failures, its job (and payload) being gone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from sqlalchemy import Row, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import pruned_failures, runs
from valuerank.queue.states import JobStatus
from valuerank.runs.breakdown import job_failure


def add_pruned(counts: dict[str, Any], gone: Sequence[Row[Any]]) -> dict[str, dict[str, int]]:
    """`runs.pruned_jobs` (kind → status → jobs) with the jobs of `gone` added."""
    added = {str(k): {str(s): int(n) for s, n in dict(by).items()} for k, by in counts.items()}
    for job in gone:
        by_status = added.setdefault(job.kind, {})
        by_status[job.status] = by_status.get(job.status, 0) + 1
    return added


async def keep_pruned_jobs(conn: AsyncConnection, gone: Sequence[Row[Any]]) -> None:
    """Add the pruned jobs of runs to their runs' counts and failures (other partitions' jobs
    are not a run's: left alone)."""
    by_run: dict[str, list[Row[Any]]] = {}
    for job in gone:
        by_run.setdefault(job.partition, []).append(job)
    if not by_run:
        return
    # Locked in id order (PostgreSQL; SQLite writes one at a time): two passes pruning the
    # same run add up instead of overwriting each other.
    owners = await conn.execute(
        select(runs.c.id, runs.c.org_id, runs.c.pruned_jobs)
        .where(runs.c.id.in_(sorted(by_run)))
        .order_by(runs.c.id)
        .with_for_update()
    )
    failed: list[dict[str, Any]] = []
    for run_id, org_id, counts in owners.all():
        mine = [job for job in by_run[run_id] if job.org_id == org_id]
        if not mine:
            continue
        await conn.execute(
            update(runs)
            .where(runs.c.id == run_id)
            .values(pruned_jobs=add_pruned(counts or {}, mine))
        )
        failed += [
            {**asdict(job_failure(job)), "org_id": org_id, "run_id": run_id}
            for job in mine
            if job.status == JobStatus.FAILED.value
        ]
    if failed:
        await conn.execute(insert(pruned_failures), failed)
