"""Watching a run: a live Rich progress bar, optionally with a worker in this process.

On the embedded default (SQLite, one host) `--work` runs the jobs right here, so one command
does everything; on PostgreSQL the workers are usually separate `valuerank worker` processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from valuerank.cli.common import console
from valuerank.config import get_settings
from valuerank.db import Database
from valuerank.runs.progress import RunReport, read_report
from valuerank.runs.results import ModelResult
from valuerank.runs.states import RunStatus
from valuerank.shapes import dump

if TYPE_CHECKING:
    from valuerank.pipeline.calls import ProviderPool
    from valuerank.queue import QueueSettings, Worker

POLL_SECONDS = 0.5
# Queued work with nothing running this long: say that a worker may be missing.
NO_WORKER_HINT_SECONDS = 10.0
LOCAL_WORKER_HINT = "Start `valuerank worker`, or wait with `--work` to run the jobs here."


@asynccontextmanager
async def in_process_worker(
    db: Database,
    *,
    concurrency: int | None = None,
    settings: QueueSettings | None = None,
    providers: ProviderPool | None = None,
) -> AsyncIterator[Worker]:
    """A worker running the pipeline's jobs in this process until the block ends; it signs
    webhook deliveries with secrets decrypted with VALUERANK_SECRET_KEY when that is set.
    `settings` default to VALUERANK_WORKER_*, `providers` to keys from the environment."""
    # The job handlers and the worker load here, not with the module: `runs status` and the
    # other commands that only read need none of them.
    from valuerank.cli.worker_settings import worker_settings
    from valuerank.crypto import optional_cipher
    from valuerank.pipeline.calls import ProviderPool
    from valuerank.pipeline.context import PipelineContext
    from valuerank.pipeline.handlers import register_pipeline_handlers
    from valuerank.pipeline.maintenance import Retention
    from valuerank.queue import Worker
    from valuerank.runs.hooks import RUN_HOOKS

    ws = worker_settings()
    worker = Worker(
        db,
        settings=settings or ws.queue_settings(),
        concurrency=concurrency or ws.concurrency,
        cipher=optional_cipher(get_settings().secret_key),
        hooks=RUN_HOOKS,
    )
    retention = Retention.of(get_settings())
    pool = ProviderPool() if providers is None else providers
    ctx = PipelineContext(db, providers=pool, retention=retention)
    register_pipeline_handlers(worker, ctx)
    task = asyncio.create_task(worker.run_forever())
    try:
        yield worker
    finally:
        worker.stop()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await ctx.aclose()


def _done(p: Mapping[str, int]) -> int:
    return p["completed"] + p["failed"] + p["cancelled"]


def _describe(r: Mapping[str, Any]) -> str:
    p, judging = r["progress"], r["judging"]
    extra = f" · judging {_done(judging)}/{judging['total']}" if judging["total"] else ""
    failed = f" · [red]{p['failed']} failed[/]" if p["failed"] else ""
    cancelled = f" · {p['cancelled']} cancelled" if p["cancelled"] else ""
    return f"{r['status']}{failed}{cancelled}{extra} · ${r['cost_usd']:.4f}"


ReadReport = Callable[[], Awaitable[dict[str, Any]]]


async def wait_for_run(
    db: Database, org_id: str, run_id: str, *, timeout: float | None, show: bool
) -> tuple[RunReport, bool]:
    """Poll the run in the database until it ends (True) or `timeout` passes (False),
    drawing a bar (`watch_run`)."""
    last: list[RunReport] = []

    async def read() -> dict[str, Any]:
        last[:] = [await read_report(db, org_id, run_id)]
        return report_json(last[0])

    _, ended = await watch_run(read, timeout=timeout, show=show)
    return last[0], ended


async def watch_run(
    read: ReadReport, *, timeout: float | None, show: bool, idle_hint: str = LOCAL_WORKER_HINT
) -> tuple[dict[str, Any], bool]:
    """Poll the run's report (`read`: from the database, or a server's GET /api/runs/{id})
    until it ends (True) or `timeout` passes (False), drawing a bar; the last report."""
    deadline = None if timeout is None else time.monotonic() + timeout
    bar = Progress(
        TextColumn("[bold]{task.fields[name]}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[state]}"),
        TimeElapsedColumn(),
        console=console,
        disable=not show,
        transient=False,
    )
    with bar:
        current = await read()
        task = bar.add_task(
            "run", total=current["progress"]["total"] or None, name=current["name"], state=""
        )
        idle_since, hinted = time.monotonic(), False
        while True:
            bar.update(
                task,
                # Completed work only, as the pages: failed and cancelled jobs are in `state`.
                completed=current["progress"]["completed"],
                total=current["progress"]["total"] or None,
                state=_describe(current),
            )
            if RunStatus(current["status"]).terminal:
                return current, True
            if deadline is not None and time.monotonic() >= deadline:
                return current, False
            await asyncio.sleep(POLL_SECONDS)
            previous, current = current, await read()
            now, before = current["progress"], previous["progress"]
            moving = now["running"] or _done(now) != _done(before)
            if moving or current["status"] != RunStatus.RUNNING.value:
                idle_since = time.monotonic()
            elif show and not hinted and time.monotonic() - idle_since > NO_WORKER_HINT_SECONDS:
                hinted = True
                bar.console.print(
                    f"[yellow]nothing has started for a while: is a worker running?[/] {idle_hint}"
                )


def results_table(
    results: list[ModelResult],
    title: str = "Results per model",
    robustness: Mapping[str, Any] | None = None,
) -> Table:
    """One row per model; decisions 1–5 as counts. Synthetic (scripted) models are starred.
    With the analysis' `robustness`, also each model's order effect (when both orders were
    asked) and its values' ranks with 95 % intervals (robustness_view)."""
    from valuerank.cli.robustness_view import order_effect_text, ranks_text

    extra = robustness or {}
    with_order = any(e.get("orderEffect") for e in extra.values())
    with_ranks = any(ranks_text(e) for e in extra.values())
    table = Table(title=title, caption="* synthetic: a scripted persona, no real model")
    table.add_column("model", no_wrap=True)
    for column in ("n", "decided", "refused", "mean", "1 2 3 4 5", "$"):
        table.add_column(column, justify="right")
    if with_order:
        table.add_column("order effect", justify="right")
    if with_ranks:
        table.add_column("value ranks [95 % CI]")
    for r in results:
        mean = "–" if r.mean_decision is None else f"{r.mean_decision:.2f}"
        counts = " ".join(str(r.decision_counts.get(k, 0)) for k in range(1, 6))
        cost = "–" if r.cost_usd is None else f"{r.cost_usd:.4f}"
        name = f"{r.model} *" if r.synthetic else r.model
        cells = [name, str(r.transcripts), str(r.decided), str(r.refusals), mean, counts, cost]
        entry = extra.get(r.model, {})
        if with_order:
            cells.append(order_effect_text(entry) if entry else "–")
        if with_ranks:
            cells.append(ranks_text(entry) or "–")
        table.add_row(*cells)
    return table


def report_keys() -> list[str]:
    """The keys of a run's report as `report_json` gives them (what `runs wait --json`
    prints), to take the same out of a server's larger answer."""
    from pydantic import TypeAdapter

    return list(TypeAdapter(RunReport).json_schema(mode="serialization")["properties"])


def report_json(r: RunReport, results: list[ModelResult] | None = None) -> dict[str, Any]:
    data: dict[str, Any] = dump(r)
    if results is not None:
        data["results"] = dump(results)
    return data
