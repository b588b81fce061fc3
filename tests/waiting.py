"""Waiting in tests for something another task, thread or process does.

`wait_until(probe, what=…)` and `await wait_until_async(probe, what=…)` ask `probe` until what
it returns is done (truthy, or `done(value)`), and return that value; past `timeout` they fail
the test naming `what` and the last value seen. A wait ends as soon as its condition holds,
so the timeout only bounds a hang: one generous default (WAIT_SECONDS) serves every wait, on
an idle laptop and on a 2-core CI machine at load 10 alike.

Where the code under test announces a change, the async wait sleeps on that announcement
instead of a fixed interval (`wake`: e.g. a subscription of the app's event listener, woken by
PostgreSQL's NOTIFY); the interval then only covers a lost announcement.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, NoReturn, Protocol, TypeVar, overload

import pytest

if TYPE_CHECKING:  # tests/conftest.py imports this module: it stays light
    from valuerank.db import Database
    from valuerank.queue import Worker
    from valuerank.runs.progress import RunReport

# Below pytest-timeout's 300 s (pyproject.toml), so that a hang fails with `what` and the last
# value rather than with a dump of every thread.
WAIT_SECONDS = 120.0
POLL_SECONDS = 0.05

T = TypeVar("T")


class Wakeup(Protocol):
    """Something that says when the awaited state may have changed (the shape of
    `valuerank.api.listener.Subscription`): `arm()` before a probe reads, then `wait()`
    returns early if a change was announced since."""

    def arm(self) -> None: ...

    async def wait(
        self, stop: asyncio.Event | None = None, timeout: float | None = None
    ) -> None: ...


def _timed_out(what: str, timeout: float, last: object) -> NoReturn:
    pytest.fail(f"timed out after {timeout:g} s waiting for {what}; last seen: {last!r}")


def wait_until(
    probe: Callable[[], T],
    *,
    what: str,
    done: Callable[[T], object] = bool,
    timeout: float = WAIT_SECONDS,
    interval: float = POLL_SECONDS,
    tolerate: tuple[type[Exception], ...] = (),
) -> T:
    """`probe()` again every `interval` seconds until `done(value)`; returns that value.
    Exceptions of the `tolerate` types count as "not yet" (a server restarting)."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            value = probe()
        except tolerate as exc:
            last = exc
        else:
            if done(value):
                return value
            last = value
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            _timed_out(what, timeout, last)
        time.sleep(min(interval, remaining))


@overload
async def wait_until_async(
    probe: Callable[[], Awaitable[T]],
    *,
    what: str,
    done: Callable[[T], object] = bool,
    timeout: float = WAIT_SECONDS,
    interval: float = POLL_SECONDS,
    tolerate: tuple[type[Exception], ...] = (),
    wake: Wakeup | None = None,
) -> T: ...


@overload
async def wait_until_async(
    probe: Callable[[], T],
    *,
    what: str,
    done: Callable[[T], object] = bool,
    timeout: float = WAIT_SECONDS,
    interval: float = POLL_SECONDS,
    tolerate: tuple[type[Exception], ...] = (),
    wake: Wakeup | None = None,
) -> T: ...


async def wait_until_async(
    probe: Callable[[], Any],
    *,
    what: str,
    done: Callable[[Any], object] = bool,
    timeout: float = WAIT_SECONDS,
    interval: float = POLL_SECONDS,
    tolerate: tuple[type[Exception], ...] = (),
    wake: Wakeup | None = None,
) -> Any:
    """`wait_until` in the event loop; `probe` is a coroutine function or a plain one. With
    `wake`, the wait between probes ends at its announcement (or after `interval` at the
    latest)."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        if wake is not None:
            wake.arm()  # before the read: a change announced while it reads is not missed
        try:
            value = probe()
            if inspect.isawaitable(value):
                value = await value
        except tolerate as exc:
            last = exc
        else:
            if done(value):
                return value
            last = value
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            _timed_out(what, timeout, last)
        if wake is None:
            await asyncio.sleep(min(interval, remaining))
        else:
            await wake.wait(timeout=min(interval, remaining))


def ended(report: RunReport) -> bool:
    return report.run.status.terminal


async def run_report_when(
    db: Database,
    org_id: str,
    run_id: str,
    done: Callable[[RunReport], object] = ended,
    *,
    what: str = "the run to end",
    timeout: float = WAIT_SECONDS,
    wake: Wakeup | None = None,
    interval: float = POLL_SECONDS,
) -> RunReport:
    """The run's report (as `runs wait` and the pages read it) once `done(report)` holds:
    by default once the run has ended, whichever way. With `wake` (a subscription to the
    run's events) it reads again when woken, else every `interval` seconds."""
    from valuerank.runs.progress import read_report

    return await wait_until_async(
        lambda: read_report(db, org_id, run_id),
        what=f"{what} (run {run_id})",
        done=done,
        timeout=timeout,
        wake=wake,
        interval=interval,
    )


async def worker_idle(worker: Worker, *, woken_above: int = -1) -> None:
    """Until `worker.run_forever()` is idle: no job running and its loop waiting for a wake-up
    that nothing has set since (every wake-up so far served by a claim); on PostgreSQL also
    listening, having heard more than `woken_above` NOTIFYs. (The worker shows no such state:
    this reads its private wake-up event, the one its loop waits on.)"""
    wakeup = worker.wakeup

    def idle() -> bool:
        wake: asyncio.Event = worker._wake
        if wakeup is not None and not (
            wakeup.woken > woken_above and wakeup.listener.connected.is_set()
        ):
            return False
        return worker.in_flight == 0 and not wake.is_set() and bool(wake._waiters)

    await wait_until_async(idle, what=f"worker {worker.worker_id} idle, waiting for a wake-up")
