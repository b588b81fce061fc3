"""`valuerank serve`: the HTTP API and the UI (and, on SQLite, a worker in the same process).

`serve(...)` is the reusable coroutine (`valuerank demo` calls it after its run): it binds the
port first (a busy port is a clear error, port 0 picks a free one), runs uvicorn until SIGINT
or SIGTERM (or until cancelled), then lets open event streams end and stops the worker.

The API (valuerank.api, which draws charts with the statistics) is imported when a server
starts, not with the CLI: the other commands start without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import ipaddress
import logging
import os
import signal
import socket
import threading
from collections.abc import AsyncIterator, Callable, Generator
from contextlib import asynccontextmanager
from functools import cache

import typer
import uvicorn
from rich.markup import escape

from valuerank.accounts import count_users
from valuerank.cli.common import configured_database, console, run
from valuerank.cli.live import in_process_worker
from valuerank.config import Settings, get_settings
from valuerank.db import Database
from valuerank.db.migrate import ensure_schema
from valuerank.errors import ValueRankError
from valuerank.orgs import ensure_org

GRACEFUL_SHUTDOWN_SECONDS = 5.0


@cache
def _access_filter() -> logging.Filter:
    """One filter for the process (added once to uvicorn's access log)."""
    from valuerank.api.redaction import RedactTokenFilter

    return RedactTokenFilter()


class PortUnavailableError(ValueRankError):
    code = "PORT_UNAVAILABLE"
    http_status = 409


class AutoLoginNotLoopbackError(ValueRankError):
    code = "AUTO_LOGIN_NOT_LOOPBACK"
    http_status = 409


class ServerStartTimeoutError(ValueRankError):
    code = "SERVER_START_TIMEOUT"
    http_status = 503


# The socket is bound and the lifespan is off, so starting takes milliseconds; past this the
# server is stuck, and saying so beats waiting for ever.
START_DEADLINE_SECONDS = 60.0


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling: `serve()` owns SIGINT/SIGTERM (uvicorn would
    re-raise the signal after shutting down, turning a clean Ctrl+C into KeyboardInterrupt)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def display_url(host: str, port: int, token: str | None = None) -> str:
    """The URL to open: a wildcard host shows as 127.0.0.1, IPv6 in brackets."""
    shown = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    with contextlib.suppress(ValueError):
        if ipaddress.ip_address(shown).version == 6:
            shown = f"[{shown}]"
    url = f"http://{shown}:{port}/"
    return f"{url}?token={token}" if token else url


def binds_loopback_only(host: str) -> bool:
    """Whether every address `host` resolves to is a loopback one (a wildcard is not)."""
    from valuerank.api.origin import is_loopback_host

    if host in ("", "0.0.0.0", "::"):
        return False
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except socket.gaierror:
        return False
    return bool(infos) and all(is_loopback_host(str(info[4][0])) for info in infos)


def check_auto_login(settings: Settings, host: str) -> None:
    """Auto-login signs in whoever reaches the server: refused unless only this machine can."""
    if settings.auto_login and not binds_loopback_only(host):
        raise AutoLoginNotLoopbackError(
            f"VALUERANK_AUTO_LOGIN is on, and --host {host} is reachable from other machines",
            hint="serve on 127.0.0.1 (the default), or turn VALUERANK_AUTO_LOGIN off and use "
            "API tokens (`valuerank tokens create`)",
        )


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening socket on (host, port); the error says what to do when the port is taken."""
    try:
        infos = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as exc:
        raise PortUnavailableError(f"cannot resolve host {host!r}: {exc.strerror}") from exc
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise PortUnavailableError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}",
            hint="choose another --port (0 picks a free one) or stop what uses this one",
        ) from exc
    sock.setblocking(False)
    return sock


@asynccontextmanager
async def _maybe_worker(db: Database, work: bool) -> AsyncIterator[None]:
    if work:
        async with in_process_worker(db):
            yield
    else:
        yield


def _install_signals(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> list[signal.Signals]:
    if threading.current_thread() is not threading.main_thread():
        return []
    installed: list[signal.Signals] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
            installed.append(sig)
    return installed


def _remove_signals(loop: asyncio.AbstractEventLoop, installed: list[signal.Signals]) -> None:
    while installed:
        loop.remove_signal_handler(installed.pop())


async def serve(
    db: Database,
    org_id: str,
    *,
    host: str,
    port: int,
    work: bool,
    on_ready: Callable[[str], None] | None = None,
    settings: Settings | None = None,
    log_level: str = "info",
    access_log: bool = True,
    sock: socket.socket | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Serve the API and UI of the install (default organisation `org_id`) until SIGINT/SIGTERM,
    `stop` is set, or cancellation.

    `on_ready(url)` is called once the server accepts connections, with the URL to open.
    `settings` default to the process's; with `auto_login` the host must be loopback
    (AUTO_LOGIN_NOT_LOOPBACK). `work`: also run the pipeline's jobs in this process. `sock`:
    a listening socket to serve on instead of binding `host:port` (one of `--workers`'
    processes, which share their parent's); it is closed at the end. The caller owns `db`.
    """
    from valuerank.api import create_app
    from valuerank.api.context import app_context
    from valuerank.cli.worker_settings import worker_settings
    from valuerank.runs.hooks import RUN_HOOKS

    settings = settings or get_settings()
    check_auto_login(settings, host)
    # The maintenance routes use the workers' own VALUERANK_WORKER_* values.
    queue_settings = worker_settings().queue_settings()
    app = create_app(
        db, org_id=org_id, settings=settings, queue_settings=queue_settings, hooks=RUN_HOOKS
    )
    # Everything made so far (the imports, the app: ~300,000 objects) lives as long as the
    # process: out of the collector's sight, a full collection no longer walks it all in the
    # middle of a request (it took 157 ms on the benchmark machine).
    gc.collect()
    gc.freeze()
    sock = bind_socket(host, port) if sock is None else sock
    config = uvicorn.Config(
        app,
        lifespan="off",
        log_level=log_level,
        access_log=access_log,
        timeout_graceful_shutdown=int(GRACEFUL_SHUTDOWN_SECONDS),
        # uvicorn believes X-Forwarded-For from loopback by default: a local client could then
        # pose as any address to the per-address login limit. Only configured proxies count.
        proxy_headers=bool(settings.forwarded_allow_ips),
        forwarded_allow_ips=settings.forwarded_allow_ips or None,
    )
    access_logger = logging.getLogger("uvicorn.access")
    if _access_filter() not in access_logger.filters:
        access_logger.addFilter(_access_filter())
    server = _Server(config)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event() if stop is None else stop
    installed = _install_signals(loop, stop)
    try:
        async with _maybe_worker(db, work):
            task = asyncio.create_task(server.serve(sockets=[sock]))
            try:
                deadline = loop.time() + START_DEADLINE_SECONDS
                while not server.started and not task.done():
                    if loop.time() > deadline:
                        raise ServerStartTimeoutError(
                            f"the server did not start within {START_DEADLINE_SECONDS:.0f} s",
                            hint="see the log above; check the host's load and try again",
                        )
                    await asyncio.sleep(0.02)
                if task.done():
                    task.result()  # startup failed: raise why
                    return
                if on_ready is not None:
                    on_ready(display_url(host, sock.getsockname()[1]))
                stopper = asyncio.create_task(stop.wait())
                try:
                    await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    stopper.cancel()
            finally:
                app_context(app).stopping.set()  # open event streams end now
                server.should_exit = True
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.shield(task)
                # While the worker lets running jobs finish, a second Ctrl+C interrupts.
                _remove_signals(loop, installed)
    finally:
        _remove_signals(loop, installed)
        sock.close()


def first_start_message(org_slug: str, url: str) -> str:
    """How to get the first admin token, printed while no user exists."""
    return (
        "No user exists yet. Create the first admin and an API token:\n"
        f"  valuerank users create you@example.org --org {org_slug} --role admin\n"
        "  valuerank tokens create --user you@example.org\n"
        f"then open {url}?token=<the token> in a browser, or send "
        "`Authorization: Bearer <the token>`."
    )


def _access_lines(settings: Settings, users: int, url: str) -> list[str]:
    if settings.auto_login:
        lines = [
            "[bold]Auto-login[/] (VALUERANK_AUTO_LOGIN): browsers and clients on this machine "
            "are signed in as the local admin."
        ]
    elif users == 0:
        lines = [escape(first_start_message(settings.default_org, url))]
    else:
        lines = [
            escape(
                f"Sign in: at {url}login with email and password (`valuerank users "
                f"set-password EMAIL`), or open {url}?token=<API token> (`valuerank tokens "
                "create --user EMAIL`); API clients send `Authorization: Bearer <token>`."
            )
        ]
    if settings.public_read_prefixes:
        shown = ", ".join(settings.public_read_prefixes)
        lines.append(f"[yellow]Open to anonymous reads:[/] {escape(shown)}")
    return lines


def serve_command(
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to listen on."),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="Port (0: any free one)."),
    work: bool | None = typer.Option(
        None,
        "--work/--no-work",
        help="Also run jobs in this process (default: on with SQLite, off with PostgreSQL); "
        "with --workers, in the first server process only.",
    ),
    workers: int = typer.Option(
        1,
        "--workers",
        min=1,
        help="Server processes sharing the port, each with its own database pool and caches "
        "(1: this process serves). More than one uses more cores; without VALUERANK_REDIS_URL "
        "each process counts rate limits on its own.",
    ),
    access_log: bool = typer.Option(
        True, "--access-log/--no-access-log", help="Log every request (uvicorn's access log)."
    ),
) -> None:
    """Serve the web UI and the JSON API. Prints the URL to open and how to sign in.

    With no user yet, it prints how to create the first admin and their API token.
    """

    async def _go() -> None:
        settings = get_settings()
        check_auto_login(settings, host)
        db = configured_database(settings, local_only=True)
        try:
            await ensure_schema(db)
            async with db.transaction() as conn:
                org_id = await ensure_org(conn, settings.default_org)
                users = await count_users(conn)
            in_process = db.url.is_sqlite if work is None else work

            def ready(url: str) -> None:
                console.print(f"[bold]ValueRank[/] is serving at {escape(url)}", soft_wrap=True)
                for line in _access_lines(settings, users, url):
                    console.print(line, soft_wrap=True, highlight=False)
                if os.environ.get("VALUERANK_API_TOKEN"):
                    console.print(
                        "[yellow]VALUERANK_API_TOKEN is no longer used:[/] create API tokens "
                        "with `valuerank tokens create`.",
                        soft_wrap=True,
                    )
                if in_process:
                    where = "this process" if workers == 1 else "the first server process"
                    console.print(f"[dim]Jobs run in {where} (--no-work to turn off).[/]")
                if workers > 1:
                    console.print(f"[dim]{workers} server processes share the port.[/]")
                    if settings.rate_limits_enabled and settings.redis_url is None:
                        console.print(
                            "[yellow]Rate limits are counted by each process:[/] a client may "
                            f"make up to {workers} times its limit (VALUERANK_REDIS_URL shares "
                            "the counts).",
                            soft_wrap=True,
                        )
                if host in ("0.0.0.0", "::"):
                    console.print("[yellow]Listening on every interface.[/]")
                console.print("[dim]Press Ctrl+C to stop.[/]")

            if workers > 1:
                await db.dispose()  # the parent serves nothing: each child opens its own
                await _supervise(host, port, org_id, in_process, workers, access_log, ready)
                return
            await serve(
                db,
                org_id,
                host=host,
                port=port,
                work=in_process,
                on_ready=ready,
                settings=settings,
                access_log=access_log,
            )
        finally:
            await db.dispose()

    run(_go())
    console.print("[dim]server stopped[/]")


async def _supervise(
    host: str,
    port: int,
    org_id: str,
    work: bool,
    workers: int,
    access_log: bool,
    ready: Callable[[str], None],
) -> None:
    """`--workers N`: N child processes serve one socket bound here (cli/serve_workers.py)."""
    from valuerank.cli.serve_workers import Supervisor

    sock = bind_socket(host, port)
    try:
        supervisor = Supervisor(sock, workers, host, org_id, work, access_log=access_log)
        await supervisor.run(lambda: ready(display_url(host, sock.getsockname()[1])))
    finally:
        sock.close()


def register(app: typer.Typer) -> None:
    app.command("serve")(serve_command)
