"""`valuerank worker`: run jobs from the configured database until stopped (or drained)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from dataclasses import asdict
from typing import Any

import typer

from valuerank.cli.common import (
    JsonOption,
    configured_database,
    console,
    err_console,
    print_json,
    run,
)
from valuerank.cli.worker_settings import WorkerSettings, worker_settings
from valuerank.config import get_settings
from valuerank.crypto import SecretCipher, optional_cipher
from valuerank.db import Database
from valuerank.db.migrate import ensure_schema
from valuerank.pipeline.context import PipelineContext
from valuerank.pipeline.handlers import register_pipeline_handlers
from valuerank.pipeline.maintenance import Retention
from valuerank.queue import Worker
from valuerank.queue.builtin import register_builtin_handlers
from valuerank.runs.hooks import RUN_HOOKS


def _line(worker: Worker, started: float) -> str:
    s = worker.stats
    return (
        f"worker [bold]{worker.worker_id}[/]: {worker.in_flight} running, "
        f"[green]{s.succeeded} done[/], [red]{s.failed} failed[/], {s.retried} retried, "
        f"{s.released} released ({time.monotonic() - started:.0f} s)"
    )


def build_worker(
    db: Database,
    ws: WorkerSettings,
    *,
    concurrency: int | None = None,
    worker_id: str | None = None,
    cipher: SecretCipher | None = None,
) -> tuple[Worker, PipelineContext]:
    """The worker `valuerank worker` runs on `db`: settings `ws` (VALUERANK_WORKER_*), the
    built-in and the pipeline's job kinds, and the runs' queue hooks. Close the context
    (`aclose`) when done with it."""
    w = Worker(
        db,
        settings=ws.queue_settings(),
        concurrency=concurrency or ws.concurrency,
        worker_id=worker_id or ws.id,
        cipher=cipher,
        hooks=RUN_HOOKS,
    )
    register_builtin_handlers(w)
    pipeline = PipelineContext(db, retention=Retention.of(get_settings()))
    register_pipeline_handlers(w, pipeline)
    return w, pipeline


def worker(
    concurrency: int | None = typer.Option(
        None, "--concurrency", "-c", min=1, help="Jobs run at once (default 4 or env)."
    ),
    burst: bool = typer.Option(
        False,
        "--burst",
        help="Run what is runnable now and the rest of the runs it touches (waiting up to "
        "BURST_WAIT_SECONDS for their next steps), then exit 0.",
    ),
    worker_id: str | None = typer.Option(None, "--id", help="Worker name in leases and logs."),
    as_json: bool = JsonOption,
) -> None:
    """Claim and run jobs until stopped (SIGTERM/SIGINT), then finish them and exit 0.

    A stop ends claiming, lets running jobs finish within
    VALUERANK_WORKER_SHUTDOWN_GRACE_SECONDS, releases the rest to the queue, and exits 0.

    Webhook deliveries are signed with secrets decrypted with VALUERANK_SECRET_KEY: give every
    worker the key the secrets were stored with.

    Settings come from VALUERANK_WORKER_<NAME> (docs/configuration.md): LEASE_SECONDS,
    HEARTBEAT_SECONDS, POLL_SECONDS, RETRY_BASE_SECONDS, RETRY_CAP_SECONDS, MAX_RUNTIME_SECONDS,
    REAP_INTERVAL_SECONDS, SHUTDOWN_GRACE_SECONDS, RETENTION_DAYS, EVENT_RETENTION_DAYS,
    MAINTENANCE_INTERVAL_SECONDS, NOTIFICATION_DRAIN_SECONDS, BURST_WAIT_SECONDS, CONCURRENCY.
    Caps over all workers: GLOBAL_CONCURRENCY and ORG_CONCURRENCY (the default per
    organisation); 0 lifts the cap set before, unset leaves the fleet's as it is."""
    ws = worker_settings()

    async def _go() -> dict[str, Any]:
        settings = get_settings()
        cipher = optional_cipher(settings.secret_key)  # an invalid key stops here, clearly
        db = configured_database(settings, local_only=True)
        try:
            await ensure_schema(db)
            w, pipeline = build_worker(
                db, ws, concurrency=concurrency, worker_id=worker_id, cipher=cipher
            )
            loop = asyncio.get_running_loop()
            signals = (signal.SIGTERM, signal.SIGINT)
            for sig in signals:
                loop.add_signal_handler(sig, w.stop)
            # From here on SIGTERM drains gracefully; supervisors (and the fault tests) wait
            # for this line before they count on it.
            err_console.print(f"worker {w.worker_id} ready (concurrency {w.concurrency})")
            started = time.monotonic()
            runner = asyncio.create_task(w.run_until_idle() if burst else w.run_forever())
            try:
                if as_json:
                    await runner
                else:
                    with console.status(_line(w, started)) as status:
                        while not runner.done():
                            await asyncio.wait([runner], timeout=0.5)
                            status.update(_line(w, started))
                    runner.result()
                    console.print(_line(w, started))
            finally:
                for sig in signals:
                    loop.remove_signal_handler(sig)
                if not runner.done():
                    runner.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await runner
                await pipeline.aclose()
            return {
                "worker_id": w.worker_id,
                "burst": burst,
                "concurrency": w.concurrency,
                "seconds": round(time.monotonic() - started, 3),
                **asdict(w.stats),
            }
        finally:
            await db.dispose()

    summary = run(_go(), as_json=as_json)
    if as_json:
        print_json(summary)
    else:
        err_console.print("[dim]worker stopped[/]")


def register(app: typer.Typer) -> None:
    app.command("worker")(worker)
