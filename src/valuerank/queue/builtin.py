"""Built-in job kinds for smoke tests, fault tests and operators: `noop`, `sleep`, `fail`.

The evaluation pipeline registers its own handlers next to these; `register_builtin_handlers`
is the one place a worker learns the built-in kinds.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from valuerank.queue.errors import Permanent
from valuerank.queue.job import Job
from valuerank.queue.worker import Worker

NOOP = "noop"
SLEEP = "sleep"
FAIL = "fail"
BUILTIN_KINDS = (NOOP, SLEEP, FAIL)


def register_builtin_handlers(worker: Worker) -> Worker:
    """Teach `worker` the built-in kinds; returns it for chaining.

    - `noop`: succeeds at once.
    - `sleep` (payload `{"seconds": x}`): sleeps, then succeeds; the result says which worker
      ran it and when (wall clock), for tests that check who finished a job and overlaps.
    - `fail` (payload `{"message": "…"}`): always raises, a poison job.
    """
    worker_id = worker.worker_id

    def _stamp(job: Job) -> dict[str, Any]:
        return {"worker": worker_id, "pid": os.getpid(), "attempt": job.attempts}

    async def noop(job: Job) -> dict[str, Any]:
        return {"ok": True, **_stamp(job)}

    async def sleep(job: Job) -> dict[str, Any]:
        payload = job.payload if isinstance(job.payload, dict) else {}
        try:
            seconds = float(payload.get("seconds", 1.0))
        except (TypeError, ValueError):
            raise Permanent(f"sleep: seconds must be a number, not {payload!r}") from None
        started = time.time()
        await asyncio.sleep(max(seconds, 0.0))
        return {"slept": seconds, "started": started, "ended": time.time(), **_stamp(job)}

    async def fail(job: Job) -> None:
        payload = job.payload if isinstance(job.payload, dict) else {}
        raise RuntimeError(str(payload.get("message", "poison job: the fail kind always fails")))

    worker.register(NOOP, noop)
    worker.register(SLEEP, sleep)
    worker.register(FAIL, fail)
    return worker
