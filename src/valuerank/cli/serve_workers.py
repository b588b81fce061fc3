"""`valuerank serve --workers N`: N server processes on one listening socket.

The parent binds the socket (a busy port is the usual clear error), then starts N children
(`python -m valuerank.cli.serve_workers`), each inheriting the socket and running `serve()`
on it: its own app, database pool, caches and LISTEN connection (the caches stay correct
across processes: valuerank/notified_cache.py), its own `gc.freeze()`. The kernel hands each
new connection to whichever process accepts it first; a keep-alive connection stays with its
process.

The parent does no HTTP. It prints the URL once every child is ready, restarts a child that
dies (saying so on stderr; one that keeps dying at start waits longer each time), and on
SIGINT or SIGTERM sends SIGTERM to every child and waits for them (a second signal is passed
on: it interrupts a worker finishing its jobs). Children are in their own process group, so
the terminal's Ctrl+C reaches the parent only, and each holds the read end of a pipe whose
write end only the parent has: if the parent is killed outright, the pipe ends and the
children stop too.

`work`: the pipeline's jobs run in the first child only (one in-process worker, not N).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from valuerank.errors import ValueRankError

# Past this a child that has not said it serves is stuck (a bound for a hang).
START_DEADLINE_SECONDS = 180.0
# A child still running this long after SIGTERM is killed (its server stops within
# GRACEFUL_SHUTDOWN_SECONDS); the child running jobs is waited for, as `serve` waits for its
# worker, unless a second signal comes.
STOP_DEADLINE_SECONDS = 30.0
# A child that dies sooner than this after it started is restarted after a delay, doubled
# each time up to the maximum: a crash at start does not spin.
STEADY_SECONDS = 10.0
FIRST_RESTART_DELAY_SECONDS = 1.0
MAX_RESTART_DELAY_SECONDS = 30.0


class ServerProcessError(ValueRankError):
    code = "SERVER_PROCESS_FAILED"
    http_status = 503


def describe_exit(code: int) -> str:
    """`code` of a child as people read it: a negative one is the signal that ended it."""
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
    return f"exit code {code}"


@dataclass
class _Child:
    proc: asyncio.subprocess.Process
    started: float  # monotonic
    exited: asyncio.Task[int]
    serving: bool = False  # it said it serves (before, SIGTERM ends it the default way)


@dataclass
class Supervisor:
    """N children serving `sock` (see the module); `run()` until stopped."""

    sock: socket.socket
    workers: int
    host: str
    org_id: str
    work: bool
    access_log: bool = True
    # A new process imports the web stack first: 30 s on a 2-core machine at load 10.
    start_deadline: float = START_DEADLINE_SECONDS
    report: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True)
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    children: dict[int, _Child] = field(default_factory=dict)  # by slot
    restarts: int = 0

    def _argv(self, slot: int, lifeline: int, ready: int) -> list[str]:
        fd = str(self.sock.fileno())
        argv = [sys.executable, "-m", "valuerank.cli.serve_workers", "--fd", fd]
        argv += ["--lifeline", str(lifeline), "--ready", str(ready)]
        argv += ["--host", self.host, "--org", self.org_id]
        if self.work and slot == 0:
            argv.append("--work")
        if not self.access_log:
            argv.append("--no-access-log")
        return argv

    async def _start(self, slot: int, lifeline: int) -> _Child:
        """Start the child of `slot`; returns once it serves. ServerProcessError if it exits
        first or is not ready within `start_deadline`."""
        read_end, write_end = os.pipe()
        try:
            proc = await asyncio.create_subprocess_exec(
                *self._argv(slot, lifeline, write_end),
                pass_fds=(self.sock.fileno(), lifeline, write_end),
                process_group=0,  # the terminal's Ctrl+C is the parent's to pass on
            )
        finally:
            os.close(write_end)
        child = _Child(proc, time.monotonic(), asyncio.create_task(proc.wait()))
        self.children[slot] = child
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_end, "rb")
        )
        said = asyncio.create_task(reader.readline())
        try:
            await asyncio.wait(
                {said, child.exited},
                timeout=self.start_deadline,
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            said.cancel()
            transport.close()
        if said.done() and not said.cancelled() and said.result() == b"ready\n":
            child.serving = True
            return child
        if child.exited.done():
            why = describe_exit(child.exited.result())
            raise ServerProcessError(f"server process {proc.pid} ended before serving ({why})")
        proc.kill()
        await asyncio.shield(child.exited)  # a cancelled start leaves it to _stop_all
        raise ServerProcessError(
            f"server process {proc.pid} did not start within {self.start_deadline:.0f} s",
            hint="see the log above; check the host's load and try again",
        )

    async def _keep(self, slot: int, lifeline: int) -> None:
        """Until stopping: when the child of `slot` dies, say so and start another."""
        delay = FIRST_RESTART_DELAY_SECONDS
        while not self.stopping.is_set():
            child = self.children[slot]
            stop = asyncio.create_task(self.stopping.wait())
            try:
                await asyncio.wait({child.exited, stop}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                stop.cancel()
            if self.stopping.is_set():
                return
            lived = time.monotonic() - child.started
            wait = 0.0 if lived >= STEADY_SECONDS else delay
            delay = FIRST_RESTART_DELAY_SECONDS if lived >= STEADY_SECONDS else delay * 2
            delay = min(delay, MAX_RESTART_DELAY_SECONDS)
            self.report(
                f"server process {child.proc.pid} exited ({describe_exit(child.exited.result())})"
                f"; starting another{f' in {wait:g} s' if wait else ''}"
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), wait)
            if self.stopping.is_set():
                return
            try:
                await self._start(slot, lifeline)
                self.restarts += 1
            except ServerProcessError as exc:
                self.report(str(exc))  # its exit is done: the next turn waits longer

    def signal_children(self, sig: signal.Signals = signal.SIGTERM) -> None:
        for child in self.children.values():
            if child.proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    child.proc.send_signal(sig)

    async def _stop_all(self) -> list[str]:
        """SIGTERM to every child, then wait; those that would not stop are killed. Returns
        what went wrong (a child that did not exit 0)."""
        self.signal_children()
        problems: list[str] = []
        for slot, child in sorted(self.children.items()):
            timeout = None if self.work and slot == 0 else STOP_DEADLINE_SECONDS
            if child.exited.cancelled():  # awaited by a start that was cancelled
                child.exited = asyncio.create_task(child.proc.wait())
            try:
                code = await asyncio.wait_for(asyncio.shield(child.exited), timeout)
            except TimeoutError:
                child.proc.kill()
                code = await child.exited
            if code != 0 and (child.serving or code != -signal.SIGTERM):
                problems.append(f"server process {child.proc.pid}: {describe_exit(code)}")
        return problems

    async def _start_all(self, lifeline: int) -> None:
        """Every child, at once; the first failure stops the start (and is raised)."""
        starts = [asyncio.create_task(self._start(s, lifeline)) for s in range(self.workers)]
        stopped = asyncio.create_task(self.stopping.wait())
        try:
            pending: set[asyncio.Task[Any]] = {*starts, stopped}
            while pending != {stopped}:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    if (failure := task.exception()) is not None:
                        raise failure
                if stopped in done:
                    return  # a signal during the start: run() stops what started
        finally:
            for task in (*starts, stopped):
                task.cancel()

    async def run(self, on_ready: Callable[[], None]) -> None:
        """Start the children, call `on_ready` once all serve, restart any that dies, and stop
        them all when `stopping` is set (SIGINT/SIGTERM set it in the main thread)."""
        loop = asyncio.get_running_loop()
        installed: list[signal.Signals] = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, self._on_signal)
                installed.append(sig)
        # The children get the read end; the parent never writes: EOF means it is gone.
        lifeline, lifeline_write = os.pipe()
        keepers: list[asyncio.Task[None]] = []
        try:
            await self._start_all(lifeline)
            if not self.stopping.is_set():
                on_ready()
                keepers = [asyncio.create_task(self._keep(s, lifeline)) for s in self.children]
                await self.stopping.wait()
        finally:
            self.stopping.set()
            for keeper in keepers:
                keeper.cancel()
            problems = await self._stop_all()
            for sig in installed:
                loop.remove_signal_handler(sig)
            os.close(lifeline)
            os.close(lifeline_write)
        if problems:
            raise ServerProcessError("; ".join(problems))

    def _on_signal(self) -> None:
        if self.stopping.is_set():
            self.signal_children()  # a second signal: interrupt a worker finishing its jobs
        self.stopping.set()


def _child_main(argv: list[str] | None = None) -> None:
    """One server process of `--workers` (started by the Supervisor, not by hand)."""
    parser = argparse.ArgumentParser(prog="valuerank serve (worker process)")
    for name in ("--fd", "--lifeline", "--ready"):
        parser.add_argument(name, type=int, required=True)
    parser.add_argument("--host", required=True)
    parser.add_argument("--org", required=True)
    parser.add_argument("--work", action="store_true")
    parser.add_argument("--no-access-log", dest="access_log", action="store_false")
    args = parser.parse_args(argv)

    from valuerank.cli.common import configured_database, run
    from valuerank.cli.serve_cmd import serve
    from valuerank.config import get_settings

    sock = socket.socket(fileno=args.fd)
    sock.setblocking(False)

    def ready(_url: str) -> None:
        os.write(args.ready, b"ready\n")
        os.close(args.ready)

    async def go() -> None:
        settings = get_settings()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_reader(args.lifeline, stop.set)  # readable only at EOF: the parent is gone
        db = configured_database(settings)
        try:
            await serve(
                db,
                args.org,
                host=args.host,
                port=0,
                work=args.work,
                on_ready=ready,
                settings=settings,
                access_log=args.access_log,
                sock=sock,
                stop=stop,
            )
        finally:
            loop.remove_reader(args.lifeline)
            await db.dispose()

    run(go())


if __name__ == "__main__":
    _child_main()
