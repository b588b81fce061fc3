"""What the API and the pages show of runs: read in one transaction, as shapes
(`valuerank.shapes`) that the routes dump and document."""

from __future__ import annotations

from dataclasses import fields
from datetime import datetime
from typing import Any, Self

from pydantic import Field, computed_field
from pydantic.dataclasses import dataclass

from valuerank.db import Database
from valuerank.default_rubric import JudgeRubric, run_judge_rubric
from valuerank.queue.events import Event, events_after
from valuerank.runs.actions import RunAction, run_actions
from valuerank.runs.breakdown import Breakdown, Failure, run_breakdown, run_failures
from valuerank.runs.events import log_entry, tally_at
from valuerank.runs.listing import RunFilter, find_runs
from valuerank.runs.progress import RunReport, run_report, run_reports
from valuerank.runs.results import ModelResult, model_results
from valuerank.runs.service import get_run
from valuerank.shapes import SHAPE, Timestamp, dump


@dataclass(frozen=True, config=SHAPE)
class RunItem(RunReport):
    """A run in a list: who it is, its status, and its probe progress."""

    @classmethod
    def of(cls, report: RunReport, *more: Any) -> Self:
        """The report's own fields, then `more` (a subclass's)."""
        return cls(*(getattr(report, f.name) for f in fields(report)), *more)

    @computed_field(return_type=Timestamp | None)  # type: ignore[prop-decorator]
    @property
    def started_at(self) -> datetime | None:
        return self.run.started_at

    @computed_field(return_type=Timestamp | None)  # type: ignore[prop-decorator]
    @property
    def finished_at(self) -> datetime | None:
        return self.run.finished_at


def run_item(report: RunReport) -> dict[str, Any]:
    """A run in a list, as JSON."""
    return dump(RunItem.of(report))  # type: ignore[no-any-return]


@dataclass(frozen=True, config=SHAPE)
class RunDetail(RunItem):
    """One run: its list item, its settings, rubric, per-model results and what may be done
    with it now."""

    results: list[ModelResult] = Field(default_factory=list)
    rubric: JudgeRubric | None = Field(
        default=None, description="The rubric the run's judges read (null: none recorded)."
    )

    @computed_field  # type: ignore[prop-decorator]
    @property
    def summary(self) -> str | None:
        return self.run.summary

    @computed_field  # type: ignore[prop-decorator]
    @property
    def priority(self) -> int:
        return self.run.priority

    @computed_field  # type: ignore[prop-decorator]
    @property
    def samples_per_scenario(self) -> int:
        return self.run.config.samples_per_scenario

    @computed_field  # type: ignore[prop-decorator]
    @property
    def judge_models(self) -> list[str]:
        return list(self.run.config.judge_models)

    @computed_field(  # type: ignore[prop-decorator]
        description="True when the judges are the organisation's defaults (none were named)."
    )
    @property
    def default_judges(self) -> bool:
        return self.run.config.default_judges

    @computed_field(description="What may be done with the run now.")  # type: ignore[prop-decorator]
    @property
    def actions(self) -> list[RunAction]:
        return run_actions(self)


async def load_runs(db: Database, org_id: str, *, limit: int) -> list[RunReport]:
    """The organisation's newest runs with their progress (read only)."""
    return (await load_run_page(db, org_id, limit=limit))[:limit]


async def load_run_page(
    db: Database,
    org_id: str,
    *,
    limit: int,
    filters: RunFilter | None = None,
    after: tuple[str, str] | None = None,
) -> list[RunReport]:
    """The organisation's newest runs passing `filters`, after the run whose (`created_at`,
    `id`) is `after`, with their progress (read only): `limit + 1` of them when there are
    that many (the extra one says a next page exists)."""
    async with db.transaction() as conn:
        runs = await find_runs(conn, org_id, filters, limit=limit, after=after)
        return await run_reports(conn, org_id, runs)


async def load_run(db: Database, org_id: str, ref: str) -> RunDetail:
    """One run (id or unique prefix) with its report and per-model results, read in one
    snapshot (the report's counts and the results agree) and writing nothing."""
    async with db.snapshot() as conn:
        report = await run_report(conn, org_id, ref)
        results = await model_results(conn, org_id, report.run.id)
        rubric = await run_judge_rubric(conn, org_id, report.run.rubric_id)
    return RunDetail.of(report, results, rubric)


async def load_breakdown(db: Database, org_id: str, ref: str) -> Breakdown:
    """The run's probe jobs per model and per provider."""
    async with db.transaction() as conn:
        return await run_breakdown(conn, await get_run(conn, org_id, ref))


async def load_failures(
    db: Database, org_id: str, ref: str, *, limit: int, after: tuple[str, str] | None
) -> list[Failure]:
    """A keyset page (`limit + 1`) of the run's failed jobs with their errors."""
    async with db.transaction() as conn:
        run = await get_run(conn, org_id, ref)
        return await run_failures(conn, run, limit=limit, after=after)


async def event_page(
    db: Database, org_id: str, ref: str, *, after: int, limit: int
) -> dict[str, Any]:
    """A page of the run's events with seq > `after`: pass `next_after` back as `after`."""
    async with db.transaction() as conn:
        run = await get_run(conn, org_id, ref)
        tally = await tally_at(conn, run, after)  # progress counts probes, as the feeds do
        batch = await events_after(conn, run.id, after, limit, org_id=org_id)
    return {
        "run_id": run.id,
        "status": run.status.value,
        "terminal": run.status.terminal,
        "events": [event_dict(e, *log_entry(e, tally)) for e in batch],
        "after": after,
        "next_after": batch[-1].seq if batch else after,
        "has_more": len(batch) == limit,
    }


def event_dict(
    event: Event, type: str | None = None, data: dict[str, Any] | None = None
) -> dict[str, Any]:
    """An event as the API shows it; `type` and `data` as its owner names them (a run's:
    `runs.events.log_entry`)."""
    return {
        "seq": event.seq,
        "type": str(event.type) if type is None else type,
        "data": event.data if data is None else data,
        "created_at": event.created_at.isoformat(),
    }
