"""`valuerank maintenance run|history|schedule-summary`: queue hygiene now, what it did, and
whether the workers' schedule holds.

`run` calls `valuerank.pipeline.maintenance.maintain`, the full pass workers also run
periodically (pruning, reaping expired leases and stale runs, …), as the system API does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import typer

from valuerank.cli.common import JsonOption, configured_database, console, print_json, run
from valuerank.cli.worker_settings import worker_settings
from valuerank.config import get_settings
from valuerank.db import Database
from valuerank.db.migrate import ensure_schema
from valuerank.pipeline.maintenance import Retention, maintain, schedule_summary
from valuerank.queue.maintenance_history import list_maintenance_runs

app = typer.Typer(
    help="Queue hygiene: prune finished jobs, reap stale work and stale runs.",
    no_args_is_help=True,
)

T = TypeVar("T")


async def _with_db(use: Callable[[Database], Awaitable[T]]) -> T:
    settings = get_settings()
    db = configured_database(settings, local_only=True)
    try:
        await ensure_schema(db)
        return await use(db)
    finally:
        await db.dispose()


def _summary_line(action: str, value: Any) -> str:
    if isinstance(value, dict) and action == "stale_runs":
        return (
            f"  stale runs: {value.get('reaped', 0)} reaped ({value.get('completed', 0)} "
            f"completed, {value.get('failed', 0)} failed), {value.get('resumed', 0)} resumed"
        )
    if isinstance(value, dict) and action == "response_cache":
        days = value.get("retention_days")
        kept = "kept forever" if days is None else f"older than {days:g} days"
        return f"  response cache: {value.get('pruned', 0)} cached answers deleted ({kept})"
    if isinstance(value, dict) and action == "transcript_retention":
        days = value.get("retention_days")
        if days is None:
            return "  transcripts: kept forever (VALUERANK_TRANSCRIPT_RETENTION_DAYS=0)"
        line = (
            f"  transcripts: {value.get('deleted', 0)} deleted from "
            f"{len(value.get('runs', []))} runs exported (finished over {days:g} days ago)"
        )
        return line + (f"; {value['error']}" if value.get("error") else "")
    return f"  {action}: {value}"


@app.command("run")
def run_(as_json: bool = JsonOption) -> None:
    """Run maintenance once, now (workers also run it every
    VALUERANK_WORKER_MAINTENANCE_INTERVAL_SECONDS). Stale runs (running, nothing of them
    queued or running) are closed as completed or failed; `stale_runs` counts them. Cached
    model answers older than VALUERANK_RESPONSE_CACHE_DAYS (default 90) are deleted. With
    VALUERANK_TRANSCRIPT_RETENTION_DAYS set, the transcripts of runs finished before it are
    exported to VALUERANK_TRANSCRIPT_EXPORT_DIR, then deleted."""

    async def _go(db: Database) -> dict[str, Any] | None:
        done = await maintain(
            db,
            worker_settings().queue_settings(),
            Retention.of(get_settings()),
            trigger="cli",
            wait=False,
        )
        return None if done is None else done.to_dict()

    result = run(_with_db(_go), as_json=as_json)
    if as_json:
        print_json(result if result is not None else {"skipped": True})
    elif result is None:
        console.print("maintenance skipped: another run holds the lock")
    else:
        console.print(f"maintenance {result['status']} in {result['duration_ms']} ms:")
        for action, value in result["actions"].items():
            console.print(_summary_line(action, value), highlight=False)


@app.command("history")
def history(
    limit: int = typer.Option(20, "--limit", "-n", min=1, max=500, help="Passes shown."),
    kind: str | None = typer.Option(
        None, "--kind", help="Only passes of this kind: full, reap_jobs, prune_jobs, …"
    ),
    as_json: bool = JsonOption,
) -> None:
    """The latest maintenance passes, newest first: what each did, who asked, and errors."""

    async def _go(db: Database) -> list[dict[str, Any]]:
        async with db.transaction() as conn:
            passes = await list_maintenance_runs(conn, kind=kind, limit=limit)
        return [p.to_dict() for p in passes]

    passes = run(_with_db(_go), as_json=as_json)
    if as_json:
        print_json(passes)
        return
    if not passes:
        console.print("no maintenance pass recorded yet")
    for p in passes:
        line = (
            f"{p['started_at']}  {p['kind']:<16} {p['trigger']:<8} {p['status']:<9} "
            f"{p['duration_ms']:>6} ms  {p['id']}"
        )
        console.print(line, highlight=False, soft_wrap=True)
        if p["error"]:
            console.print(f"    error: {p['error']}", highlight=False, soft_wrap=True)


@app.command("schedule-summary")
def schedule_summary_(as_json: bool = JsonOption) -> None:
    """When the scheduled (full) pass last ran, when it is next due, and anomalies: missed
    schedules and failed passes (the interval is VALUERANK_WORKER_MAINTENANCE_INTERVAL_SECONDS)."""

    async def _go(db: Database) -> dict[str, Any]:
        async with db.transaction() as conn:
            summary, _ = await schedule_summary(conn, worker_settings().queue_settings())
        return summary.to_dict()

    summary = run(_with_db(_go), as_json=as_json)
    if as_json:
        print_json(summary)
        return
    last = summary["last_pass"]
    console.print(f"schedule: {summary['status']} (every {summary['interval_seconds']:g} s)")
    console.print(
        "last pass: " + ("never" if last is None else f"{last['started_at']} ({last['status']})")
    )
    console.print(f"next due: {summary['next_due'] or '-'}")
    for anomaly in summary["anomalies"]:
        console.print(f"  {anomaly['kind']} at {anomaly['at']}: {anomaly['key']}", highlight=False)
