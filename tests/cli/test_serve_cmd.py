"""`valuerank serve`: the reusable `serve()` coroutine (with an in-process worker running a
real run to the end while a client watches it over SSE), and the command in a real process
stopped by SIGINT. SQLite: the embedded mode this command is for."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from tests.servers import serving
from tests.waiting import WAIT_SECONDS

import valuerank
from valuerank.cli.serve_cmd import (
    AutoLoginNotLoopbackError,
    PortUnavailableError,
    bind_socket,
    binds_loopback_only,
    check_auto_login,
    display_url,
)
from valuerank.config import Settings
from valuerank.db import Database
from valuerank.definitions.service import import_definition
from valuerank.runs.config import RunConfig
from valuerank.runs.service import create_run, start_run

DEMO = Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md"
sqlite_only = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


def _client(url: str, **kwargs: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=url, timeout=10, verify=False, follow_redirects=True, **kwargs
    )


@sqlite_only
async def test_serve_runs_a_worker_and_streams_the_run_to_its_end(
    db: Database, org_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VALUERANK_WORKER_POLL_SECONDS", "0.05")
    async with db.transaction() as conn:
        stored, _ = await import_definition(conn, org_id, DEMO.read_text(), source_file=DEMO.name)
        created = await create_run(
            conn,
            org_id,
            stored.version.id,
            RunConfig(models=("scripted:utilitarian",), sample_percentage=10),
        )
        await start_run(conn, org_id, created.run.id)
        idle = await create_run(
            conn,
            org_id,
            stored.version.id,
            RunConfig(models=("scripted:utilitarian",), sample_percentage=10),
        )
    run_id, idle_id = created.run.id, idle.run.id

    # Auto-login, as `valuerank demo` serves: a browser on this machine lands signed in.
    settings = Settings(auto_login=True, rate_limits_enabled=False, redis_url=None)
    async with serving(db, org_id, work=True, settings=settings, log_level="warning") as served:
        url, base = served.url, served.base
        parts = urlsplit(url)
        assert parts.hostname == "127.0.0.1" and parts.port and parts.path == "/"
        assert not parts.query  # no token in the URL any more
        async with _client(base) as browser:
            assert (await browser.get(url)).status_code == 200
            me = (await browser.get("/api/auth/me")).json()["data"]
            assert me["via"] == "local" and me["role"] == "admin"
            seen: list[tuple[str, Any]] = []
            async with asyncio.timeout(WAIT_SECONDS):  # the stream ends with the run
                async with browser.stream("GET", f"/api/runs/{run_id}/events/stream") as stream:
                    event = "message"
                    async for line in stream.aiter_lines():
                        if line.startswith("event: "):
                            event = line[7:]
                        elif line.startswith("data: "):
                            seen.append((event, json.loads(line[6:])))
                            event = "message"
            end = seen[-1]
            assert end[0] == "end" and end[1]["status"] == "completed"
            assert end[1]["last_seq"] == seen[-2][1]["seq"]
            types = {data["type"] for kind, data in seen if kind == "message"}
            assert {"task_complete", "run_complete"} <= types
            detail = (await browser.get(f"/api/runs/{run_id}")).json()["data"]
            assert detail["status"] == "completed"
            assert detail["results"][0]["model"] == "scripted:utilitarian"
            assert detail["results"][0]["synthetic"] is True
            page = (await browser.get(f"/runs/{run_id}")).text
            # One chart besides the progress bars (each an <svg class="seg-bar">).
            assert page.count("<svg") - page.count('<svg class="seg-bar"') == 1

            # A stream of a run that never ends is closed cleanly when the server stops: its
            # last message's blank line, then the end of the body. (Were it left to uvicorn's
            # graceful timeout, the connection would be cut mid-body: an error here.)
            async with browser.stream("GET", f"/api/runs/{idle_id}/events/stream") as stream:
                lines = stream.aiter_lines()
                while not (await anext(lines)).startswith("data: "):
                    pass
                served.task.cancel()
                async with asyncio.timeout(WAIT_SECONDS):
                    rest = [line async for line in lines]
            assert rest == [""]
            with pytest.raises(asyncio.CancelledError):
                await served.task
    with pytest.raises(httpx.ConnectError):  # the port is closed again
        async with _client(base) as client:
            await client.get("/health")


# A new `valuerank serve` process imports the web stack and opens the database before it
# prints its URL: seconds on a slow 2-core machine running two other test processes (20 s
# was not always enough). A bound for a hang, not a speed requirement.
SERVER_START_SECONDS = 60


async def _start_serve(env: dict[str, str], *args: str) -> Any:
    script = (
        "import typer\nfrom valuerank.cli import serve_cmd\n"
        "app = typer.Typer()\nserve_cmd.register(app)\n"
        "@app.callback()\ndef main() -> None: pass\napp()\n"
    )
    return await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, "serve", "--port", "0", "--no-work", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip


def _valuerank(env: dict[str, str], *args: str, stdin: str = "") -> str:
    done = subprocess.run(
        [sys.executable, "-m", "valuerank", *args],
        input=stdin, capture_output=True, text=True, env=env, timeout=60, check=True,
    )  # fmt: skip
    return done.stdout


@sqlite_only
async def test_first_start_says_how_to_get_a_token_and_stops_cleanly_on_sigint(
    database_url: Any,
) -> None:
    env = {**os.environ, "VALUERANK_DATABASE_URL": database_url.url}
    for name in ("VALUERANK_WORKER_POLL_SECONDS", "VALUERANK_AUTO_LOGIN", "VALUERANK_API_TOKEN"):
        env.pop(name, None)
    proc = await _start_serve(env)
    assert proc.stdout is not None and proc.stderr is not None
    try:
        lines: list[str] = []
        async with asyncio.timeout(SERVER_START_SECONDS):
            while not lines or "Ctrl+C" not in lines[-1]:
                raw = await proc.stdout.readline()
                assert raw, (await proc.stderr.read()).decode()
                lines.append(raw.decode())
        printed = "".join(lines)
        url = printed.split("serving at ", 1)[1].split()[0]
        assert url.endswith("/") and "token=" not in url
        # The first start says exactly how to get the first admin token.
        assert "No user exists yet" in printed
        assert "valuerank users create you@example.org --org default --role admin" in printed
        assert "valuerank tokens create --user you@example.org" in printed
        base = url.rstrip("/")
        async with _client(base) as client:
            assert (await client.get("/health")).json()["data"]["status"] == "ok"
            assert (await client.get("/api/runs")).status_code == 401
        # Follow the instructions while the server runs.
        _valuerank(env, "users", "create", "you@example.org", "--org", "default",
                   "--role", "admin")  # fmt: skip
        token = _valuerank(env, "tokens", "create", "--user", "you@example.org").strip()
        async with _client(base) as browser:
            assert (await browser.get(f"{url}?token={token}")).status_code == 200  # 303, then /
            assert (await browser.get("/api/runs")).status_code == 200  # the cookie alone
            bearer = {"Authorization": f"Bearer {token}"}
            assert (await browser.get("/metrics", headers=bearer)).status_code == 200
        proc.send_signal(signal.SIGINT)
        async with asyncio.timeout(15):
            rest, errors = await proc.communicate()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, errors.decode()
    out = rest.decode()
    assert "server stopped" in out
    # uvicorn's access log (stdout) saw the login, not the token.
    assert 'GET /?token=[redacted] HTTP/1.1" 303' in out
    assert token not in out and token not in errors.decode()
    assert "Traceback" not in errors.decode()

    # Once a user exists, the start says how to sign in instead.
    proc = await _start_serve(env)
    assert proc.stdout is not None
    try:
        async with asyncio.timeout(SERVER_START_SECONDS):
            printed = ""
            while "Ctrl+C" not in printed:
                raw = await proc.stdout.readline()
                assert raw
                printed += raw.decode()
        assert "No user exists yet" not in printed and "Sign in:" in printed
        assert "/login with email and password" in printed
    finally:
        proc.send_signal(signal.SIGINT)
        await proc.communicate()


def test_auto_login_is_refused_off_loopback(raw_cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VALUERANK_AUTO_LOGIN", "true")
    out = raw_cli("serve", "--host", "0.0.0.0", "--port", "0")
    assert out.exit_code == 1
    assert "VALUERANK_AUTO_LOGIN is on" in out.stderr and "127.0.0.1" in out.stderr
    assert binds_loopback_only("127.0.0.1") and binds_loopback_only("localhost")
    assert binds_loopback_only("::1")
    for host in ("0.0.0.0", "::", "", "192.0.2.2", "no-such-host.invalid"):
        assert not binds_loopback_only(host), host
    check_auto_login(Settings(auto_login=True), "127.0.0.1")
    check_auto_login(Settings(auto_login=False), "0.0.0.0")
    with pytest.raises(AutoLoginNotLoopbackError):
        check_auto_login(Settings(auto_login=True), "::")


def test_display_url() -> None:
    assert display_url("127.0.0.1", 8000, "abc") == "http://127.0.0.1:8000/?token=abc"
    assert display_url("0.0.0.0", 80) == "http://127.0.0.1:80/"
    assert display_url("::", 8000, "t") == "http://[::1]:8000/?token=t"
    assert display_url("localhost", 1) == "http://localhost:1/"


def test_a_busy_port_is_a_clear_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(PortUnavailableError, match="choose another --port") as info:
            bind_socket("127.0.0.1", port)
        assert info.value.code == "PORT_UNAVAILABLE"
    free = bind_socket("127.0.0.1", 0)
    try:
        assert free.getsockname()[1] > 0
    finally:
        free.close()


@sqlite_only
@pytest.mark.parametrize("trusted", ["", "127.0.0.1"])
async def test_forwarded_addresses_are_believed_only_from_configured_proxies(
    db: Database, org_id: str, trusted: str
) -> None:
    """The per-address login limit counts the connecting address: a loopback client rotating
    X-Forwarded-For was once counted as ten clients. Behind a configured proxy, the address
    it forwards is the client's."""
    from valuerank.accounts.users import add_member

    async with db.transaction() as conn:
        await add_member(conn, org_id, "ada@example.org", "viewer", password="x" * 20)
    settings = Settings(
        auto_login=False,
        rate_limits_enabled=True,
        rate_limit_login="3/minute",
        redis_url=None,
        forwarded_allow_ips=trusted,
    )
    statuses: list[int] = []
    async with (
        serving(db, org_id, settings=settings, log_level="warning") as served,
        _client(served.base) as client,
    ):
        for n in range(5):
            answer = await client.post(
                "/api/auth/login",
                json={"email": f"user{n}@example.org", "password": "wrong" * 4},
                headers={"X-Forwarded-For": f"203.0.113.{n}"},
            )
            statuses.append(answer.status_code)
    if trusted:  # five clients behind the proxy, one failure each
        assert statuses == [401] * 5
    else:  # one client, whatever it claims
        assert statuses == [401, 401, 401, 429, 429]
