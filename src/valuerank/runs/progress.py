"""How far a run is: job counts per state, cost so far, and an ETA."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import jobs, judgments, transcripts
from valuerank.queue.dialect import as_utc
from valuerank.runs.service import JUDGE, PROBE, SUMMARIZE, Run, get_run

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


async def job_progress(conn: AsyncConnection, run_id: str, kinds: tuple[str, ...]) -> Progress:
    rows = await conn.execute(
        select(jobs.c.status, func.count())
        .where(jobs.c.partition == run_id, jobs.c.kind.in_(kinds))
        .group_by(jobs.c.status)
    )
    return progress_of({status: int(n) for status, n in rows})


def progress_of(job_counts: Mapping[str, int]) -> Progress:
    """Progress from jobs counted per queue status (`succeeded` is reported as completed)."""
    counts = dict(job_counts)
    counts["completed"] = counts.pop("succeeded", 0)
    return Progress(total=sum(counts.values()), **{s: counts.get(s, 0) for s in STATES})


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
    progress = await job_progress(conn, run.id, (PROBE,))
    judging = await job_progress(conn, run.id, (JUDGE, SUMMARIZE))
    count, probe_cost = (
        await conn.execute(
            select(func.count(), func.coalesce(func.sum(transcripts.c.cost_usd), 0.0)).where(
                transcripts.c.org_id == org_id, transcripts.c.run_id == run.id
            )
        )
    ).one()
    judge_cost = (
        await conn.execute(
            select(func.coalesce(func.sum(judgments.c.cost_usd), 0.0))
            .select_from(judgments.join(transcripts))
            .where(transcripts.c.org_id == org_id, transcripts.c.run_id == run.id)
        )
    ).scalar_one()
    return RunReport(
        run=run,
        progress=progress,
        judging=judging,
        transcripts=int(count),
        cost_usd=float(probe_cost) + float(judge_cost),
        eta_seconds=_eta(run, progress, datetime.now(UTC)),
    )
