"""`valuerank serve --workers N` in real processes: N children serve one port (each can answer
alone), a child that dies is replaced, SIGTERM stops them all with exit 0, and a parent
killed outright takes its children with it. PostgreSQL (the deployment it is for) and
SQLite (allowed: WAL lets the processes share the file; jobs run in the first child)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.waiting import WAIT_SECONDS, wait_until_async

from valuerank.db import Database

postgres_only = pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
sqlite_only = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


def children_of(pid: int) -> list[int]:
    """The live (not zombie) child processes of `pid`, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # it ended meanwhile
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry.name))
    return sorted(found)


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_text().split("\0")


@dataclass
class Served:
    proc: asyncio.subprocess.Process
    base: str
    printed: str
    stderr: list[str] = field(default_factory=list)  # lines so far

    def children(self) -> list[int]:
        return children_of(self.proc.pid)


@asynccontextmanager
async def serving(database_url: str, *args: str) -> AsyncIterator[Served]:
    """`valuerank serve --port 0 --no-access-log ARGS` on `database_url`, once it printed its
    URL; killed at the end (with its children) unless the test stopped it."""
    env = {**os.environ, "VALUERANK_DATABASE_URL": database_url}
    for name in ("VALUERANK_WORKER_POLL_SECONDS", "VALUERANK_AUTO_LOGIN", "VALUERANK_API_TOKEN"):
        env.pop(name, None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "valuerank", "serve", "--port", "0", "--no-access-log", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    stderr: list[str] = []

    async def copy_stderr(stream: asyncio.StreamReader) -> None:
        while line := await stream.readline():
            stderr.append(line.decode())

    reader = asyncio.create_task(copy_stderr(proc.stderr))
    try:
        printed = ""
        async with asyncio.timeout(WAIT_SECONDS):
            while "Ctrl+C" not in printed:
                line = await proc.stdout.readline()
                assert line, f"serve ended before serving:\n{printed}{''.join(stderr)}"
                printed += line.decode()
        url = printed.split("serving at ", 1)[1].split()[0]
        yield Served(proc, url.rstrip("/"), printed, stderr)
    finally:
        if proc.returncode is None:
            pids = children_of(proc.pid)
            for pid in [proc.pid, *pids]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)  # a test may have stopped it
                    os.kill(pid, signal.SIGKILL)
            await proc.wait()
        await reader


async def _health(base: str) -> dict[str, Any]:
    """GET /health on a new connection (a kept-alive one would stay with one process)."""
    async with httpx.AsyncClient(base_url=base, timeout=WAIT_SECONDS) as client:
        response = await client.get("/health")
    assert response.status_code == 200
    data: dict[str, Any] = response.json()["data"]
    return data


async def _each_child_serves_alone(served: Served) -> None:
    """With every other child stopped (SIGSTOP), requests are still answered: each child
    accepts from the shared socket by itself."""
    children = served.children()
    for serving_one in children:
        others = [pid for pid in children if pid != serving_one]
        for pid in others:
            os.kill(pid, signal.SIGSTOP)
        try:
            for _ in range(3):
                assert (await _health(served.base))["status"] == "ok"
        finally:
            for pid in others:
                os.kill(pid, signal.SIGCONT)


@postgres_only
async def test_two_processes_serve_one_port_and_sigterm_stops_them_all(
    db: Database, database_url: Any
) -> None:
    async with serving(database_url.url, "--workers", "2", "--no-work") as served:
        assert "2 server processes share the port" in served.printed
        assert "Jobs run" not in served.printed
        children = served.children()
        assert len(children) == 2, children
        for pid in children:
            line = cmdline(pid)
            assert "valuerank.cli.serve_workers" in line and "--work" not in line
        await _each_child_serves_alone(served)

        # A child that dies is reported and replaced; the port is served all along.
        os.kill(children[0], signal.SIGKILL)

        async def replaced() -> list[int]:
            now = served.children()
            return now if len(now) == 2 and children[0] not in now else []

        now = await wait_until_async(replaced, what="a new server process")
        # The report reaches this test through a pipe read by another task: wait for it.
        said = await wait_until_async(
            lambda: "".join(served.stderr),
            done=lambda text: "starting another" in text,
            what="the report of the dead process",
        )
        assert f"server process {children[0]} exited (killed by SIGKILL)" in said
        # The new one serves once started (connections wait in the socket's queue till then).
        await _each_child_serves_alone(served)

        served.proc.send_signal(signal.SIGTERM)
        assert served.proc.stdout is not None  # stderr is being read already
        async with asyncio.timeout(WAIT_SECONDS):
            out = await served.proc.stdout.read()
            await served.proc.wait()
    assert served.proc.returncode == 0, "".join(served.stderr)
    assert "server stopped" in out.decode()
    assert not any(alive(pid) for pid in now)
    assert "Traceback" not in "".join(served.stderr)
    with pytest.raises(httpx.ConnectError):
        await _health(served.base)


@sqlite_only
async def test_sqlite_workers_run_jobs_in_one_process_and_stop_with_their_parent(
    db: Database, database_url: Any
) -> None:
    async with serving(database_url.url, "--workers", "2") as served:
        # SQLite runs jobs in the server by default: in the first child only.
        assert "Jobs run in the first server process" in served.printed
        children = served.children()
        assert len(children) == 2
        assert sorted("--work" in cmdline(pid) for pid in children) == [False, True]
        await _each_child_serves_alone(served)
        # The parent killed outright (no chance to stop them): its children notice and stop.
        served.proc.kill()
        await served.proc.wait()
        await wait_until_async(
            lambda: not any(alive(pid) for pid in children), what="the children to stop"
        )


@sqlite_only
def test_workers_must_be_at_least_one(raw_cli: Any) -> None:
    out = raw_cli("serve", "--workers", "0", "--port", "0")
    assert out.exit_code == 2  # a usage error: nothing was started
    said = " ".join(out.stderr.replace("│", " ").split())
    assert "Invalid value for '--workers': Input should be greater than or equal to 1" in said
