"""How far a run is: job counts per state, cost so far, and an ETA.

A run's report is read often (every `runs status`, every poll of the API and the pages)
and must cost the same for a run of 1,000 or 100,000 jobs: its job counts come from the
partition's counters, which the queue moves with every job (`queue/events.py`), minus the
run's jobs of other kinds than probe (finalize, judge, summarize), found through the
(partition, kind, status) index without reading the probes. `job_progress` counts jobs one
by one, for the decisions that must be exact (finalize, stale runs, completion). Both add the
run's jobs that maintenance pruned (`runs.pruned_jobs`, see runs/pruned.py), read in the same
statement: a job is counted live or pruned, never both nor neither.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, Self

from pydantic import computed_field, field_serializer
from pydantic.dataclasses import dataclass
from sqlalchemy import Integer, Select, String, cast, literal, select, union_all
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.engine import Database
from valuerank.db.tables import runs
from valuerank.queue.dialect import as_utc
from valuerank.queue.partitions import counter_rows, job_counts
from valuerank.queue.states import JobStatus
from valuerank.runs.kinds import JUDGE, PROBE, SUMMARIZE
from valuerank.runs.run import Run, get_run
from valuerank.runs.summary import RunIdentity
from valuerank.runs.tallies import tallies_of_runs
from valuerank.shapes import SHAPE

STATES = ("queued", "running", "completed", "failed", "cancelled")


@dataclass(frozen=True, config=SHAPE)
class Progress:
    """Jobs per state (`completed` counts succeeded jobs)."""

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

    @property
    def completed_percent(self) -> int:
        """Whole percent of the jobs that completed: failed and cancelled jobs are finished
        but are not done work. Rounded down, so 100 means every job completed (web/static/
        api.js `completedPercent` is the same rule)."""
        return 100 * self.completed // self.total if self.total else 0

    @classmethod
    def of(cls, by_status: Counter[str], **more: Any) -> Self:
        """From job counts keyed by the queue's statuses (`succeeded` is `completed` here);
        `more`: a subclass's own fields."""
        counts = {s: max(0, by_status[s]) for s in STATES if s != "completed"}
        counts["completed"] = max(0, by_status[JobStatus.SUCCEEDED.value])
        return cls(total=sum(counts.values()), **counts, **more)


def _pruned_row(run_id: str, columns: int) -> Select[Any]:
    """The run's `pruned_jobs` as JSON text, last of `columns` (the others empty), to be read
    in the union that counts its live jobs."""
    blanks = [literal(None, String) for _ in range(columns - 2)]
    return select(*blanks, literal(0, Integer), cast(runs.c.pruned_jobs, String)).where(
        runs.c.id == run_id
    )


def pruned_counts(document: str | None, kinds: Iterable[str]) -> Counter[str]:
    """The pruned jobs of `kinds` per status, from `runs.pruned_jobs` as JSON text."""
    found: Counter[str] = Counter()
    by_kind = json.loads(document) if document else {}
    for kind in kinds:
        for status, n in (by_kind.get(kind) or {}).items():
            found[str(status)] += int(n)
    return found


async def job_progress(conn: AsyncConnection, run_id: str, kinds: tuple[str, ...]) -> Progress:
    """The run's jobs of `kinds` counted one by one (exact; reads every such job), with its
    pruned ones."""
    counted = job_counts(run_id, kinds=kinds).subquery("live")
    live = select(counted.c.status, counted.c.n, literal(None, String))
    counts: Counter[str] = Counter()
    for status, n, pruned in await conn.execute(union_all(live, _pruned_row(run_id, 3))):
        if pruned is not None:
            counts.update(pruned_counts(pruned, kinds))
        elif status is not None:
            counts[str(status)] += int(n)
    return Progress.of(counts)


async def run_progress(conn: AsyncConnection, run_id: str) -> tuple[Progress, Progress]:
    """(probe jobs, judge and summarize jobs) of the run: see `runs_progress`."""
    return (await runs_progress(conn, [run_id]))[run_id]


async def runs_progress(
    conn: AsyncConnection, run_ids: Sequence[str]
) -> dict[str, tuple[Progress, Progress]]:
    """Each run's (probe jobs, judge and summarize jobs), without reading its probes: the
    partition's counters minus its jobs of every other kind (see the module), plus its pruned
    jobs. One statement for all, so all are read in one snapshot (a job finishing between two
    reads would be counted as a probe; one pruned, twice or not at all)."""
    ids = list(run_ids)
    kinds = job_counts(ids, by=("partition", "kind", "status"), other_than_kind=PROBE).subquery(
        "others"
    )
    others = select(*kinds.c, literal(None, String))
    kept = counter_rows(ids).subquery("counters")
    counters = select(
        kept.c.partition, literal(None, String), kept.c.status, kept.c.n, literal(None, String)
    )
    pruned_rows = select(
        runs.c.id,
        literal(None, String),
        literal(None, String),
        literal(0, Integer),
        cast(runs.c.pruned_jobs, String),
    ).where(runs.c.id.in_(ids))
    probes: dict[str, Counter[str]] = {run_id: Counter() for run_id in ids}
    judging: dict[str, Counter[str]] = {run_id: Counter() for run_id in ids}
    for run_id, kind, status, n, pruned in await conn.execute(
        union_all(others, counters, pruned_rows)
    ):
        if pruned is not None:
            probes[run_id].update(pruned_counts(pruned, (PROBE,)))
            judging[run_id].update(pruned_counts(pruned, (JUDGE, SUMMARIZE)))
            continue
        if status is None:  # a run's row without pruned jobs
            continue
        if kind is None:  # the partition's counter: jobs of every kind
            probes[run_id][str(status)] += int(n)
            continue
        probes[run_id][str(status)] -= int(n)
        if kind in (JUDGE, SUMMARIZE):
            judging[run_id][str(status)] += int(n)
    return {run_id: (Progress.of(probes[run_id]), Progress.of(judging[run_id])) for run_id in ids}


@dataclass(frozen=True, config=SHAPE)
class RunReport(RunIdentity):
    """A run's status and progress: probe jobs (`progress`), judge and summary jobs
    (`judging`), transcripts, cost so far and an ETA."""

    progress: Progress  # probe jobs: one per (scenario, model, sample)
    judging: Progress  # judge and summarize jobs
    transcripts: int
    cost_usd: float
    eta_seconds: float | None

    @field_serializer("cost_usd")
    def _rounded_cost(self, value: float) -> float:
        return round(value, 6)

    @field_serializer("eta_seconds")
    def _rounded_eta(self, value: float | None) -> float | None:
        return None if value is None else round(value, 1)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def error(self) -> str | None:
        return self.run.error


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
    return (await run_reports(conn, org_id, [run]))[0]


async def read_report(db: Database, org_id: str, ref: str) -> RunReport:
    """The run's report, read in one snapshot and writing nothing: a read never moves a run
    (a stalled one is maintenance's to move on: `pipeline/run_end.py`, `reap_stale_runs`)."""
    async with db.snapshot() as conn:
        return await run_report(conn, org_id, ref)


async def run_reports(conn: AsyncConnection, org_id: str, listed: Sequence[Run]) -> list[RunReport]:
    """`run_report` of runs already read (a page of them): their tallies in one query, their
    progress in one statement."""
    tallies = await tallies_of_runs(conn, org_id, [run.id for run in listed])
    progresses = await runs_progress(conn, [run.id for run in listed])
    now = datetime.now(UTC)
    reports = []
    for run in listed:
        progress, judging = progresses[run.id]
        mine = tallies.get(run.id, [])
        reports.append(
            RunReport(
                run=run,
                progress=progress,
                judging=judging,
                transcripts=sum(t.transcripts for t in mine),
                cost_usd=sum(t.cost_usd + t.judge_cost_usd for t in mine),
                eta_seconds=_eta(run, progress, now),
            )
        )
    return reports
