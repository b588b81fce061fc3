"""`valuerank maintenance run`: one pass of queue hygiene (pruning, stale runs, …) now.

It calls `valuerank.queue.maintenance.run_maintenance`, which workers also run periodically.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import typer

from valuerank.cli.common import JsonOption, console, print_json, run
from valuerank.cli.worker_settings import worker_settings
from valuerank.config import get_settings
from valuerank.db import create_database
from valuerank.db.migrate import ensure_schema
from valuerank.queue.dialect import iso
from valuerank.queue.maintenance import run_maintenance

app = typer.Typer(help="Queue hygiene: prune finished jobs, reap stale work.", no_args_is_help=True)


@app.command("run")
def run_(as_json: bool = JsonOption) -> None:
    """Run maintenance once, now (workers also run it every
    VALUERANK_WORKER_MAINTENANCE_INTERVAL_SECONDS)."""

    async def _go() -> dict[str, Any] | None:
        settings = get_settings()
        db = create_database(settings.database_url, busy_timeout_ms=settings.sqlite_busy_timeout_ms)
        try:
            await ensure_schema(db)
            done = await run_maintenance(db, worker_settings().queue_settings())
        finally:
            await db.dispose()
        if done is None:
            return None
        data = dataclasses.asdict(done)
        data.update(started_at=iso(done.started_at), finished_at=iso(done.finished_at))
        return data

    result = run(_go(), as_json=as_json)
    if as_json:
        print_json(result if result is not None else {"skipped": True})
    elif result is None:
        console.print("maintenance skipped: another run holds the lock")
    else:
        console.print(f"maintenance {result['status']} in {result['duration_ms']} ms:")
        for action, value in result["actions"].items():
            console.print(f"  {action}: {value}")
