"""The servers and worker processes tests start, each in one place.

- `running(app)`: any ASGI app (ValueRank's or a test's) on a real uvicorn server on
  127.0.0.1, in the test's event loop. Its socket is bound before uvicorn starts (the port is
  known at once) and the server says when it accepts connections: no polling.
- `serving(db, org_id, …)`: `valuerank serve`'s own coroutine (the app, optionally a worker,
  its logging and shutdown), ready when it calls `on_ready` with its URL.
- `serving_in_a_thread(url, org_id, …)`: the same on its own event loop in a thread, for a
  synchronous caller (the CLI's tests asking a server through `CliRunner`).
- `start_worker_process(env, …)`: a real `valuerank worker` process whose stderr is read
  line by line as it comes (so a full pipe never freezes it), kept in a file for the report,
  and whose "ready" line ends `wait_ready()`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pytest
import uvicorn
from fastapi import FastAPI
from tests.waiting import WAIT_SECONDS

from valuerank.cli.serve_cmd import bind_socket, serve
from valuerank.db import Database

LOOPBACK = "127.0.0.1"


class _AnnouncingServer(uvicorn.Server):
    """uvicorn that sets `ready` once its start-up is done (it accepts connections)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = asyncio.Event()

    async def startup(self, sockets: list[Any] | None = None) -> None:
        await super().startup(sockets)
        self.ready.set()


async def _first_of(work: asyncio.Task[Any], ready: asyncio.Task[Any], what: str) -> None:
    """Until `ready` is done; fails with why if `work` ends first or nothing happens."""
    try:
        await asyncio.wait({work, ready}, timeout=WAIT_SECONDS, return_when=asyncio.FIRST_COMPLETED)
    finally:
        ready.cancel()
    if ready.done() and not ready.cancelled():
        return
    if work.done():
        work.result()  # it failed: raise why
        raise RuntimeError(f"{what} stopped before it was ready")
    work.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await work
    pytest.fail(f"{what} was not ready within {WAIT_SECONDS:g} s")


@asynccontextmanager
async def running(app: Any) -> AsyncIterator[str]:
    """Serve `app` with uvicorn on 127.0.0.1 (a free port) in this event loop; yields its base
    URL. On exit ValueRank's open event streams are ended and the server stops."""
    sock = bind_socket(LOOPBACK, 0)
    config = uvicorn.Config(
        app, lifespan="off", log_level="warning", access_log=False, timeout_graceful_shutdown=2
    )
    server = _AnnouncingServer(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        await _first_of(task, asyncio.create_task(server.ready.wait()), "uvicorn")
        try:
            yield f"http://{LOOPBACK}:{sock.getsockname()[1]}"
        finally:
            context = getattr(app.state, "valuerank", None) if isinstance(app, FastAPI) else None
            if context is not None:  # ValueRank's app: its open event streams end
                context.stopping.set()
            server.should_exit = True
            await task
    finally:
        sock.close()


@dataclass
class Served:
    """`serve()` running: the URL it printed, and its task (cancel it to stop the server)."""

    url: str
    task: asyncio.Task[None]

    @property
    def base(self) -> str:
        return self.url.split("?", 1)[0].rstrip("/")


@asynccontextmanager
async def serving(db: Database, org_id: str, **options: Any) -> AsyncIterator[Served]:
    """`valuerank serve`'s coroutine on 127.0.0.1 (a free port) with `options` (`work`,
    `settings`, `log_level`; no worker unless `work=True`), once it has called `on_ready`.
    Cancelled at the end unless the test stopped it; cancellation is how it ends."""
    options.setdefault("work", False)
    urls: asyncio.Queue[str] = asyncio.Queue()
    task = asyncio.create_task(
        serve(db, org_id, host=LOOPBACK, port=0, on_ready=urls.put_nowait, **options)
    )
    try:
        url_task = asyncio.create_task(urls.get())
        await _first_of(task, url_task, "valuerank serve")
        yield Served(url_task.result(), task)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@dataclass
class WorkerProc:
    """A `valuerank worker --json` process (see `start_worker_process`)."""

    proc: subprocess.Popen[str]
    worker_id: str
    log_path: Path  # its stderr so far
    ready: threading.Event = field(default_factory=threading.Event)
    _stdout: list[str] = field(default_factory=list)
    _readers: list[threading.Thread] = field(default_factory=list)

    def log(self) -> str:
        return self.log_path.read_text("utf-8", errors="replace")

    def output(self) -> str:
        """Its stdout so far (all of it once `finish` has returned)."""
        return "".join(self._stdout)

    def signal(self, sig: signal.Signals) -> None:
        if sig in (signal.SIGTERM, signal.SIGINT):
            # Before its handlers are installed (a slow start on a busy machine) SIGTERM
            # would kill the worker instead of draining it.
            self.wait_ready()
        self.proc.send_signal(sig)

    def wait_ready(self, timeout: float = WAIT_SECONDS) -> None:
        """Until it says it is ready, or has ended (the exit code then tells how)."""
        if not self.ready.wait(timeout):
            pytest.fail(f"worker {self.worker_id} not ready within {timeout:g} s:\n{self.log()}")

    def _ended(self, timeout: float) -> int:
        code = self.proc.wait(timeout)
        for reader in self._readers:  # the pipes are at their end: this is quick
            reader.join(timeout)
        return code

    def finish(self, timeout: float = WAIT_SECONDS) -> tuple[int, dict[str, Any]]:
        """Wait for exit; (exit code, the --json summary or {})."""
        code = self._ended(timeout)
        out = self.output()
        try:
            summary = json.loads(out) if out.strip() else {}
        except json.JSONDecodeError:
            summary = {}
        if code != 0:
            print(f"worker {self.worker_id} stderr:\n{self.log()}", file=sys.stderr)
        return code, summary

    def stop(self) -> None:
        """Killed if still running (resumed first, in case it was stopped)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
        self._ended(WAIT_SECONDS)


def _copy_stderr(stream: IO[str], log_path: Path, ready_line: str, ready: threading.Event) -> None:
    with stream, log_path.open("a", encoding="utf-8") as log:
        for line in stream:
            log.write(line)
            log.flush()
            if ready_line in line:
                ready.set()
    ready.set()  # it ended: whoever waits for it to be ready looks at how


def _collect(stream: IO[str], into: list[str]) -> None:
    with stream:
        into.extend(stream)


def start_worker_process(
    env: Mapping[str, str], *args: str, worker_id: str, log_path: Path | None = None
) -> WorkerProc:
    """`python -m valuerank worker --json --id <worker_id> <args>` with environment `env`.
    Both pipes are read as the process writes (a full pipe would freeze it): stdout kept for
    the summary, stderr copied to `log_path` (a temporary file when None)."""
    if log_path is None:
        fd, name = tempfile.mkstemp(prefix=f"valuerank-worker-{worker_id}-", suffix=".log")
        os.close(fd)
        log_path = Path(name)
    log_path.write_text("")
    proc = subprocess.Popen(
        [sys.executable, "-m", "valuerank", "worker", "--json", "--id", worker_id, *args],
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    worker = WorkerProc(proc, worker_id, log_path)
    ready_line = f"worker {worker_id} ready"
    worker._readers = [
        threading.Thread(
            target=_copy_stderr, args=(proc.stderr, log_path, ready_line, worker.ready), daemon=True
        ),
        threading.Thread(target=_collect, args=(proc.stdout, worker._stdout), daemon=True),
    ]
    for reader in worker._readers:
        reader.start()
    return worker


@contextlib.contextmanager
def serving_in_a_thread(
    database_url: str, org_id: str, *, settings: Any, work: bool = False
) -> Iterator[str]:
    """`valuerank serve`'s coroutine on its own event loop in a thread (with its own
    connection to the database at `database_url`), for a synchronous caller — a Typer
    `CliRunner` asking it blocks the caller's loop. Yields its base URL; stopped at the end.
    `work`: the server also runs the pipeline's jobs, as `valuerank serve` on one host does."""
    from valuerank.db import create_database

    urls: queue.Queue[str | BaseException] = queue.Queue()
    loop_box: list[asyncio.AbstractEventLoop] = []
    stop: list[asyncio.Event] = []

    async def main() -> None:
        loop_box.append(asyncio.get_running_loop())
        stop.append(asyncio.Event())
        db = create_database(database_url)
        try:
            async with serving(db, org_id, settings=settings, work=work) as served:
                urls.put(served.base)
                await stop[0].wait()
        finally:
            await db.dispose()

    def thread_main() -> None:
        try:
            asyncio.run(main())
        except BaseException as exc:  # the caller waiting for a URL is told why
            urls.put(exc)

    thread = threading.Thread(target=thread_main, name="valuerank-serve", daemon=True)
    thread.start()
    try:
        first = urls.get(timeout=WAIT_SECONDS)
    except queue.Empty:
        pytest.fail(f"valuerank serve in a thread was not ready within {WAIT_SECONDS:g} s")
    if isinstance(first, BaseException):
        raise first
    try:
        yield first
    finally:
        loop_box[0].call_soon_threadsafe(stop[0].set)
        thread.join(WAIT_SECONDS)
        leftover = None if urls.empty() else urls.get_nowait()
        if isinstance(leftover, BaseException):
            raise leftover
