"""The secret key of the embedded default: a key file next to the SQLite database.

Stored provider keys are encrypted with `VALUERANK_SECRET_KEY`. A team server (PostgreSQL,
several hosts) must set it explicitly — every host has to share it, so nothing here invents
one. The embedded SQLite database lives in one file on one machine, so when no key is set the
key lives beside it: `<database>.secret-key`, created on first use (mode 0600, written to a
temporary file and linked into place, so a concurrent start never reads half a key) and read
on every later start. The key is never printed; losing the file makes stored keys unreadable,
exactly like changing `VALUERANK_SECRET_KEY`.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from pydantic import SecretStr
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.config import get_settings
from valuerank.crypto import SECRET_KEY_ENV, generate_key, is_fernet_key
from valuerank.db.url import DatabaseURLError, normalize_database_url
from valuerank.errors import ValueRankError

KEY_FILE_SUFFIX = ".secret-key"
KEY_FILE_MODE = 0o600


class SecretKeyFileInvalid(ValueRankError):
    """The key file beside the embedded database exists but does not hold a Fernet key."""

    code = "SECRET_KEY_FILE_INVALID"
    http_status = 503


def key_file_for(database_file: str | Path) -> Path:
    """Where the key of the SQLite database `database_file` lives."""
    path = Path(database_file)
    return path.with_name(path.name + KEY_FILE_SUFFIX)


def _read_key(path: Path) -> SecretStr:
    text = path.read_text("ascii", errors="replace").strip()
    if not is_fernet_key(text):
        raise SecretKeyFileInvalid(
            f"{path} does not hold a secret key (it was altered or truncated)",
            hint=f"restore the file from a backup, or set {SECRET_KEY_ENV} to the key that "
            "encrypted the stored API keys",
        )
    return SecretStr(text)


def load_or_create_key(path: Path) -> SecretStr:
    """The key in `path`, created (0600, atomically) when there is none yet."""
    try:
        return _read_key(path)
    except FileNotFoundError:
        pass
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, KEY_FILE_MODE)
    try:
        os.fchmod(fd, KEY_FILE_MODE)  # exactly 0600, whatever the umask
        os.write(fd, (generate_key() + "\n").encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        # link, not rename: it fails when another process created the file meanwhile, and
        # then both use that one key.
        os.link(temporary, path)
    except FileExistsError:
        pass
    finally:
        os.unlink(temporary)
    return _read_key(path)


def _sqlite_file(url: URL) -> str | None:
    database = url.database
    if url.get_backend_name() != "sqlite" or not database or database == ":memory:":
        return None
    if url.query.get("mode") == "memory" or database.startswith("file::memory:"):
        return None
    return database


def embedded_key_for_url(database_url: str) -> SecretStr | None:
    """The key file's key for an embedded (file) SQLite database; None for any other."""
    try:
        url = normalize_database_url(database_url).url
    except DatabaseURLError:
        return None
    database = _sqlite_file(url)
    return None if database is None else load_or_create_key(key_file_for(database))


def secret_key_for_url(database_url: str) -> SecretStr | None:
    """`VALUERANK_SECRET_KEY` when set, else the embedded database's key file (or None)."""
    return get_settings().secret_key or embedded_key_for_url(database_url)


def secret_key_for(conn: AsyncConnection) -> SecretStr | None:
    """`VALUERANK_SECRET_KEY` when set, else the key file of the database `conn` is on when
    that is an embedded SQLite file; None (so SECRET_KEY_MISSING) on PostgreSQL."""
    configured = get_settings().secret_key
    if configured is not None:
        return configured
    database = _sqlite_file(conn.engine.url)
    return None if database is None else load_or_create_key(key_file_for(database))
