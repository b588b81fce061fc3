"""How far a run is: job counts per state, cost so far, and an ETA.

A run's report is read often (every `runs status`, every poll of the API and the pages)
and must cost the same for a run of 1,000 or 100,000 jobs: its job counts come from the
partition's counters, which the queue moves with every job (`queue/events.py`), minus the
run's jobs of other kinds than probe (finalize, judge, summarize), found through the
(partition, kind, status) index without reading the probes. `job_progress` counts jobs one
by one, for the decisions that must be exact (finalize, stale runs, completion).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import String, func, literal, or_, select, union_all
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import jobs, queue_controls
from valuerank.queue.dialect import as_utc
from valuerank.queue.events import COUNTER_COLUMNS, PARTITION_SCOPE
from valuerank.queue.states import JobStatus
from valuerank.runs.service import JUDGE, PROBE, SUMMARIZE, Run, get_run
from valuerank.runs.tallies import run_tally

STATES = ("queued", "running", "completed", "failed", "cancelled")


@dataclass(frozen=True)
class Progress:
    total: int
    queued: int
    running: int
    completed: int
    failed: int
    cancelled: int

    @property
    def done(self) -> int:
        return self.completed + self.failed + self.cancelled

    @property
    def active(self) -> int:
        return self.queued + self.running

    def to_dict(self) -> dict[str, int]:
        return {
            "total": self.total,
            "queued": self.queued,
            "running": self.running,
            "completed": self.completed,
            "failed": self.failed,
            "cancelled": self.cancelled,
        }

    @classmethod
    def of(cls, by_status: Counter[str]) -> Progress:
        """From job counts keyed by the queue's statuses (`succeeded` is `completed` here)."""
        counts = {s: max(0, by_status[s]) for s in STATES if s != "completed"}
        counts["completed"] = max(0, by_status[JobStatus.SUCCEEDED.value])
        return cls(total=sum(counts.values()), **counts)


async def job_progress(conn: AsyncConnection, run_id: str, kinds: tuple[str, ...]) -> Progress:
    """The run's jobs of `kinds` counted one by one (exact; reads every such job)."""
    rows = await conn.execute(
        select(jobs.c.status, func.count())
        .where(jobs.c.partition == run_id, jobs.c.kind.in_(kinds))
        .group_by(jobs.c.status)
    )
    return Progress.of(Counter({str(status): int(n) for status, n in rows}))


async def run_progress(conn: AsyncConnection, run_id: str) -> tuple[Progress, Progress]:
    """(probe jobs, judge and summarize jobs) of the run, without reading its probes: the
    partition's counters minus its jobs of every other kind (see the module). One statement,
    so both are read in one snapshot (a job finishing between two reads would be counted as
    a probe)."""
    others = (
        select(jobs.c.kind, jobs.c.status, func.count())
        .where(jobs.c.partition == run_id, or_(jobs.c.kind < PROBE, jobs.c.kind > PROBE))
        .group_by(jobs.c.kind, jobs.c.status)
    )
    counters = [
        select(
            literal(None, String), literal(status.value, String), queue_controls.c[column]
        ).where(queue_controls.c.scope == PARTITION_SCOPE, queue_controls.c.key == run_id)
        for status, column in COUNTER_COLUMNS.items()
    ]
    probes: Counter[str] = Counter()
    judging: Counter[str] = Counter()
    for kind, status, n in await conn.execute(union_all(others, *counters)):
        if kind is None:  # the partition's counter: jobs of every kind
            probes[str(status)] += int(n)
            continue
        probes[str(status)] -= int(n)
        if kind in (JUDGE, SUMMARIZE):
            judging[str(status)] += int(n)
    return Progress.of(probes), Progress.of(judging)


@dataclass(frozen=True)
class RunReport:
    run: Run
    progress: Progress  # probe jobs: one per (scenario, model, sample)
    judging: Progress  # judge and summarize jobs
    transcripts: int
    cost_usd: float
    eta_seconds: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.run.summary_dict(),
            "progress": self.progress.to_dict(),
            "judging": self.judging.to_dict(),
            "transcripts": self.transcripts,
            "cost_usd": round(self.cost_usd, 6),
            "eta_seconds": None if self.eta_seconds is None else round(self.eta_seconds, 1),
            "error": self.run.error,
        }


def _eta(run: Run, progress: Progress, now: datetime) -> float | None:
    """Remaining jobs at the rate jobs have finished so far (None until one has)."""
    if run.started_at is None or progress.done == 0 or progress.active == 0:
        return None if progress.active else 0.0
    elapsed = (now - as_utc(run.started_at)).total_seconds()
    if elapsed <= 0:
        return None
    return progress.active * elapsed / progress.done


async def run_report(conn: AsyncConnection, org_id: str, ref: str) -> RunReport:
    run = await get_run(conn, org_id, ref)
    progress, judging = await run_progress(conn, run.id)
    tallies = await run_tally(conn, org_id, run.id)
    return RunReport(
        run=run,
        progress=progress,
        judging=judging,
        transcripts=sum(t.transcripts for t in tallies),
        cost_usd=sum(t.cost_usd + t.judge_cost_usd for t in tallies),
        eta_seconds=_eta(run, progress, datetime.now(UTC)),
    )
