"""Putting a run on the queue as the eval-run flow does it: one call that starts a pending
run, says so when its jobs already exist, and reruns a terminal one.

Idempotent under concurrency: the run moves by a guarded UPDATE and probe jobs are unique per
(run, item key), so of two concurrent calls only one can insert jobs; the other sees them and
answers `enqueued=False`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.runs.service import Run, get_run, rerun_failed, start_run
from valuerank.runs.states import RunStatus


@dataclass(frozen=True)
class Enqueued:
    run: Run
    jobs: int  # jobs this call put on the queue (new probes, or failed ones requeued)
    reopened: bool  # a terminal run went back to running

    @property
    def enqueued(self) -> bool:
        return self.jobs > 0

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.run.summary_dict(),
            "enqueued": self.enqueued,
            "jobs_enqueued": self.jobs,
            "reopened": self.reopened,
        }


async def enqueue_run(conn: AsyncConnection, org_id: str, ref: str) -> Enqueued:
    """Start the run: a pending run gets its probe jobs (`enqueued=True`); a running or
    paused one already has them (`enqueued=False`); a completed, failed or cancelled run is
    rerun — its failed jobs go back to the queue with fresh attempts and the run reopens
    (`enqueued=True`), or nothing happens when none failed (`enqueued=False`). Cancelled jobs
    are final in the queue's state machine and are not rerun.
    """
    run = await get_run(conn, org_id, ref)
    if run.status.terminal:
        reopened, count = await rerun_failed(conn, org_id, run.id)
        return Enqueued(reopened, count, reopened=count > 0)
    if run.status is RunStatus.SUMMARIZING:  # every probe ran; judging/summaries under way
        return Enqueued(run, 0, reopened=False)
    started = await start_run(conn, org_id, run.id)
    return Enqueued(started.run, started.enqueued, reopened=False)
