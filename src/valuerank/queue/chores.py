"""The worker's periodic chores (`run_forever` only): maintenance every
`maintenance_interval_seconds` (the fleet runs it about once per interval: a run skips when
another started within 90 % of the interval) and delivering due webhook notifications every
`notification_drain_seconds`, each as a background task so a slow webhook never delays
claiming. A chore still running when it comes due again is not started twice; the first run
comes one interval after start. `run_until_idle` (burst mode) does neither: it must return as
soon as the jobs are done, not wait on HTTP; callers that want them call the worker's
`maintain()` / `drain_outbox()` themselves."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from valuerank.queue.db_retry import log_db_failure

ChoreRun = Callable[[], Coroutine[Any, Any, Any]]


class ChoreScheduler:
    """Starts each chore (name → (interval in seconds, what to run)) when it falls due."""

    def __init__(self) -> None:
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._due: dict[str, float] = {}

    def schedule(self, chores: Mapping[str, tuple[float, ChoreRun]]) -> None:
        """Start the chores that are due and not running (called on every worker pass)."""
        now = time.monotonic()
        for name, (interval, run) in chores.items():
            running = self._tasks.get(name)
            if running is not None and not running.done():
                continue
            due = self._due.setdefault(name, now + interval)  # first: one interval in
            if now < due:
                continue
            self._due[name] = now + interval
            self._tasks[name] = asyncio.create_task(self._run(name, run))

    @staticmethod
    async def _run(name: str, run: ChoreRun) -> None:
        try:
            await run()
        except Exception as exc:
            log_db_failure(name, exc)

    async def stop(self, grace: float) -> None:
        """After the jobs are settled: let running chores finish for up to `grace` seconds,
        then cancel them (a cancelled delivery comes back when its lease expires)."""
        tasks = [t for t in self._tasks.values() if not t.done()]
        if tasks and grace > 0:
            await asyncio.wait(tasks, timeout=grace)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()
