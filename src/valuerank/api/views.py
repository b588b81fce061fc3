"""What the API and the pages show of runs: read in one transaction, turned into plain dicts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from valuerank.db import Database
from valuerank.pipeline.launch import watch_report
from valuerank.queue.dialect import iso
from valuerank.queue.events import Event
from valuerank.runs.progress import RunReport, run_report
from valuerank.runs.results import ModelResult, model_results
from valuerank.runs.service import list_runs


def run_item(report: RunReport) -> dict[str, Any]:
    """A run in a list: who it is, its status, and its probe progress."""
    run = report.run
    return {
        **run.summary_dict(),
        **report.to_dict(),
        "created_at": iso(run.created_at),
        "started_at": iso(run.started_at),
        "finished_at": iso(run.finished_at),
    }


@dataclass(frozen=True)
class RunDetail:
    report: RunReport
    results: list[ModelResult]

    def to_dict(self) -> dict[str, Any]:
        run = self.report.run
        return {
            **run_item(self.report),
            "summary": run.summary,
            "priority": run.priority,
            "sample_percentage": run.config.sample_percentage,
            "samples_per_scenario": run.config.samples_per_scenario,
            "judge_models": list(run.config.judge_models),
            "results": [r.to_dict() for r in self.results],
        }


async def load_runs(db: Database, org_id: str, *, limit: int) -> list[RunReport]:
    """The organisation's newest runs with their progress (read only)."""
    async with db.transaction() as conn:
        runs = await list_runs(conn, org_id, limit=limit)
        return [await run_report(conn, org_id, run.id) for run in runs]


async def load_run(db: Database, org_id: str, ref: str) -> RunDetail:
    """One run (id or unique prefix) with its refreshed report and per-model results."""
    report = await watch_report(db, org_id, ref)
    async with db.transaction() as conn:
        results = await model_results(conn, org_id, report.run.id)
    return RunDetail(report, results)


def event_dict(event: Event) -> dict[str, Any]:
    return {
        "seq": event.seq,
        "type": str(event.type),
        "data": event.data,
        "created_at": event.created_at.isoformat(),
    }
