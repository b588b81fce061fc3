"""A server process for a benchmark: started on a free loopback port, ready once `/health`
answers 200, killed if it never does."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(
    argv: Callable[[int], list[str]],
    env: Mapping[str, str],
    *,
    timeout: float = 90.0,  # a loaded 2-core machine takes 20 s to import the server
    quiet: bool = False,
    stdout_to_stderr: bool = False,
) -> tuple[subprocess.Popen[bytes], str]:
    """(the process running `argv(port)`, its base URL) once its `/health` answers 200.
    `quiet`: its output is dropped; `stdout_to_stderr`: its stdout goes to ours stderr (a
    benchmark printing JSON on stdout)."""
    port = free_port()
    output = subprocess.DEVNULL if quiet else None
    stdout = sys.stderr if stdout_to_stderr and not quiet else output
    child = subprocess.Popen(argv(port), env=dict(env), stdout=stdout, stderr=output)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if child.poll() is not None:
                raise RuntimeError(f"the server exited with {child.returncode} before starting")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                    return child, base
            time.sleep(0.1)
        raise RuntimeError(f"the server did not start within {timeout:.0f} s")
    except BaseException:
        child.kill()
        child.wait()
        raise
