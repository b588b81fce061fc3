"""`valuerank maintenance run`: one pass of queue hygiene (pruning, stale runs, …) now.

It calls `valuerank.queue.maintenance.run_maintenance`, which workers also run periodically.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from typing import Any

import typer

from valuerank.cli.common import JsonOption, console, fail, print_json, run
from valuerank.config import get_settings, queue_settings
from valuerank.db import create_database
from valuerank.db.migrate import ensure_schema

app = typer.Typer(help="Queue hygiene: prune finished jobs, reap stale work.", no_args_is_help=True)


def _plain(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    return value


@app.command("run")
def run_(as_json: bool = JsonOption) -> None:
    """Run maintenance once, now."""
    try:
        module = importlib.import_module("valuerank.queue.maintenance")
        run_maintenance = module.run_maintenance
    except (ImportError, AttributeError):
        fail(
            "queue maintenance is not available in this version",
            code="NOT_AVAILABLE",
            as_json=as_json,
            hint="valuerank.queue.maintenance.run_maintenance is missing",
        )

    async def _go() -> Any:
        settings = get_settings()
        db = create_database(settings.database_url, busy_timeout_ms=settings.sqlite_busy_timeout_ms)
        try:
            await ensure_schema(db)
            params = inspect.signature(run_maintenance).parameters
            kwargs: dict[str, Any] = {}
            if "settings" in params:
                kwargs["settings"] = queue_settings()
            first = next(iter(params), "db")
            if first in ("conn", "connection"):
                async with db.transaction(immediate=True) as conn:
                    return await run_maintenance(conn, **kwargs)
            return await run_maintenance(db, **kwargs)
        finally:
            await db.dispose()

    result = _plain(run(_go(), as_json=as_json))
    if as_json:
        print_json(result)
    else:
        console.print("maintenance done:", result)
