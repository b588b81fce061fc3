"""What every command shares: the database session, output (Rich or `--json`), errors."""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, NoReturn, TypeVar

import typer
from rich.console import Console
from sqlalchemy.exc import DataError, DBAPIError, OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.cli.invoked import command_name
from valuerank.client import ApiClient, ApiError
from valuerank.config import Settings, get_settings
from valuerank.db import Database, create_database, refused
from valuerank.db.migrate import SchemaOutOfDateError, ensure_schema
from valuerank.db.url import DatabaseURLError, normalize_database_url
from valuerank.definitions.errors import DefinitionError
from valuerank.errors import ValueRankError
from valuerank.formats.errors import FormatError
from valuerank.orgs import ensure_org
from valuerank.terminal import print_json as print_json  # re-exported: commands print JSON
from valuerank.terminal import show_error

T = TypeVar("T")

console = Console()
err_console = Console(stderr=True)

JsonOption = typer.Option(False, "--json", help="Print machine-readable JSON on stdout.")


def fail(message: str, *, code: str, as_json: bool, hint: str | None = None) -> NoReturn:
    """Report an error (JSON on stdout with --json, else red on stderr) and exit 1."""
    show_error(message, code=code, as_json=as_json, hint=hint)
    raise typer.Exit(1)


def api_client(settings: Settings) -> ApiClient | None:
    """The server that commands which can ask one ask instead of the database
    (VALUERANK_API_URL), or None."""
    token = settings.api_token.get_secret_value() if settings.api_token else None
    return ApiClient.configured(settings.api_url, token)


def ask(server: ApiClient, call: Callable[[ApiClient], T], *, as_json: bool) -> T:
    """`call(server)`, its ApiError an exit 1 with the server's code and hint."""
    try:
        return call(server)
    except ApiError as exc:
        fail(exc.message, code=exc.code, as_json=as_json, hint=exc.hint)


def local_or_server(
    local: Callable[[], Awaitable[T]], remote: Callable[[ApiClient], T], *, as_json: bool
) -> T:
    """A command's answer: `remote(server)` when VALUERANK_API_URL names a server (its
    ApiError an exit 1 with the server's code and hint), else `local()` on the database
    (`run`). Both give what the command prints, in the same shape."""
    server = api_client(get_settings())
    if server is not None:
        return ask(server, remote, as_json=as_json)
    return run(local(), as_json=as_json)


def run(coro: Awaitable[T], *, as_json: bool = False) -> T:
    """Run a command's coroutine, turning every anticipated error into a clear exit 1. It
    runs with the runs' queue hooks in effect: a run cancelled from the CLI ends and notifies
    as it would through the API or a worker (queue/hooks.py)."""
    from valuerank.queue.hooks import using  # here: a command that asks a server needs none
    from valuerank.runs.hooks import RUN_HOOKS

    try:
        with using(RUN_HOOKS):
            return asyncio.run(_await(coro))
    except (FormatError, DefinitionError) as exc:
        fail(exc.render(), code="INVALID_FILE", as_json=as_json)
    except ValueRankError as exc:
        fail(exc.message, code=exc.code, as_json=as_json, hint=exc.hint)
    except DatabaseURLError as exc:
        fail(str(exc), code="INVALID_DATABASE_URL", as_json=as_json)
    except SchemaOutOfDateError as exc:
        fail(str(exc), code="SCHEMA_OUT_OF_DATE", as_json=as_json)
    except DataError as exc:  # the database is up and refused a value: bad input
        fail(
            refused.refused_value_message(exc),
            code=refused.CODE,
            as_json=as_json,
            hint=refused.HINT,
        )
    except (OperationalError, DBAPIError) as exc:
        fail(
            f"database error: {exc.orig if exc.orig is not None else exc}",
            code="DATABASE_UNAVAILABLE",
            as_json=as_json,
            hint="check VALUERANK_DATABASE_URL and that the database server is running",
        )
    except OSError as exc:
        fail(f"{exc.strerror or exc}: {exc.filename}", code="FILE_ERROR", as_json=as_json)


async def _await(coro: Awaitable[T]) -> T:
    return await coro


@dataclass
class Session:
    """An open transaction on the configured database, in the configured organisation."""

    db: Database
    conn: AsyncConnection
    org_id: str
    settings: Settings


@dataclass
class Opened:
    """The configured database, upgraded, and this install's organisation; no transaction."""

    db: Database
    org_id: str
    settings: Settings


class NoServerPathError(ValueRankError):
    """A command asked for the database while VALUERANK_API_URL names a server: it must not
    quietly work on a local database the user did not mean."""

    code = "NO_SERVER_PATH"


def configured_database(settings: Settings, *, local_only: bool = False) -> Database:
    """The database the settings name, with their lock wait (SQLite), pool (PostgreSQL) and
    choice of fast paths.

    With a server configured (VALUERANK_API_URL) a command that can only work on the database
    (`local_only`: db, worker, serve, maintenance) says on stderr that it does; any other is
    refused (NO_SERVER_PATH): it would otherwise read or write a database the user did not
    mean while believing it asked the server."""
    if settings.api_url and settings.api_url.strip():
        where = normalize_database_url(settings.database_url).render()
        if not local_only:
            raise NoServerPathError(
                f"`{command_name()}` works on a database, not through the server at "
                f"{settings.api_url.strip()} (VALUERANK_API_URL)",
                hint=f"unset VALUERANK_API_URL to work on the database at {where}",
            )
        err_console.print(
            f"note: `{command_name()}` works on the database at {where} "
            "(VALUERANK_DATABASE_URL), never through a server: VALUERANK_API_URL is not "
            "used",
            style="dim",
            soft_wrap=True,
            markup=False,
        )
    return create_database(
        settings.database_url,
        busy_timeout_ms=settings.sqlite_busy_timeout_ms,
        pool_size=settings.db_pool_size,
        pool_overflow=settings.db_pool_overflow,
        fast_paths=settings.db_fast_paths,
    )


@asynccontextmanager
async def database(*, local_only: bool = False) -> AsyncIterator[Opened]:
    """Open the configured database (upgrading an embedded SQLite one) for long-lived work
    (a worker, a server) that opens its own short transactions (`local_only`: see
    `configured_database`)."""
    settings = get_settings()
    db = configured_database(settings, local_only=local_only)
    try:
        await ensure_schema(db)
        async with db.transaction() as conn:
            org_id = await ensure_org(conn, settings.default_org)
        yield Opened(db=db, org_id=org_id, settings=settings)
    finally:
        await db.dispose()


@asynccontextmanager
async def session(*, local_only: bool = False) -> AsyncIterator[Session]:
    """Open the configured database (upgrading an embedded SQLite one), one transaction
    (`local_only`: a command that administers the install itself, which the API lets no one
    do remotely; see `configured_database`).

    Immediate on SQLite: a command that reads and then writes must not find, at its first
    write, that a worker wrote since its read (SQLite cannot upgrade such a transaction).
    """
    async with (
        database(local_only=local_only) as opened,
        opened.db.transaction(immediate=True) as conn,
    ):
        yield Session(db=opened.db, conn=conn, org_id=opened.org_id, settings=opened.settings)


def read_bytes(path: Path) -> bytes:
    """A user's file as bytes, with errors that name it."""
    if not path.exists():
        raise FileNotFoundError(2, "no such file", str(path))
    if path.is_dir():
        raise IsADirectoryError(21, "is a directory, expected a file", str(path))
    return path.read_bytes()


def read_text(path: Path) -> str:
    """A user's file as text, with errors that name it."""
    if not path.exists():
        raise FileNotFoundError(2, "no such file", str(path))
    if path.is_dir():
        raise IsADirectoryError(21, "is a directory, expected a file", str(path))
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(
            f"not UTF-8 text (byte {exc.start})",
            source=str(path),
            hint="save the file as UTF-8",
        ) from exc


class OutputNotWrittenError(ValueRankError):
    code = "OUTPUT_NOT_WRITTEN"
    http_status = 500


TEMP_SUFFIX = ".tmp"


@contextmanager
def atomic_output(path: Path) -> Iterator[IO[bytes]]:
    """A binary file (seekable) that replaces `path` when the block ends, all at once: a
    temporary file beside the target, flushed to disk, then renamed over it. On any failure
    (a full disk, a target that is a folder, an error while writing, an interrupt) the
    temporary file is removed and the target is left as it was; a failure of the file
    system is OUTPUT_NOT_WRITTEN, naming the file."""
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=path.parent)
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        raise OutputNotWrittenError(
            f"could not write {path}: {exc.strerror or exc}",
            hint="check the path, its permissions and the free space",
        ) from exc
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


def write_atomically(path: Path, data: str | bytes) -> None:
    """Write the whole file or nothing (see `atomic_output`)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data  # may raise: nothing made yet
    with atomic_output(path) as handle:
        handle.write(raw)
