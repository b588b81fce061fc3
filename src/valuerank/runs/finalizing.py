"""A run's finalize job, and the guarantee that an open run whose probes have all ended has
one (`finalize_owed`, one of the runs' queue hooks).

The last probes of a run enqueue its finalize job (`pipeline/run_end.py`, "the tail"), but a
probe asks while its own job and its neighbours' still count as running: a worker settles
completions after their handlers, in groups, so on a fast run every probe can see more than
the tail's share still live and none enqueues it. When the partition's last job ends the
queue asks its owner whether anything is still owed: here, the finalize job of an open run.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import runs
from valuerank.queue import JobSpec, enqueue
from valuerank.runs.kinds import FINALIZE, FINALIZE_KIND, FinalizePayload
from valuerank.runs.run import Run, get_run
from valuerank.runs.states import RunStatus

# The states a run ends from (by the finalize rule; cancelling also ends paused and pending).
OPEN = (RunStatus.RUNNING, RunStatus.SUMMARIZING)


def finalize_spec(run: Run) -> JobSpec:
    return FINALIZE_KIND.spec(
        FinalizePayload(run_id=run.id, generation=run.config.generation),
        org_id=run.org_id,
        partition=run.id,
        item_key=f"{FINALIZE}:{run.config.generation}",
        priority=run.priority,
        delay_seconds=0.2,
    )


async def ensure_finalize(conn: AsyncConnection, run: Run) -> bool:
    """Enqueue the run's finalize job for its generation; False if it exists already."""
    return (await enqueue(conn, finalize_spec(run))).enqueued


async def finalize_owed(conn: AsyncConnection, org_id: str, partition: str) -> bool:
    """A run's partition has no job left: an open run gets the finalize job of its
    generation if it has none (True: enqueued, the run is not finished). Another partition,
    or a run already closed or finalized in this generation, is left as it is."""
    status = await conn.scalar(
        select(runs.c.status).where(runs.c.org_id == org_id, runs.c.id == partition)
    )
    if status is None or RunStatus(status) not in OPEN:
        return False
    return await ensure_finalize(conn, await get_run(conn, org_id, partition))
