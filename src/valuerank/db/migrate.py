"""Schema migrations on both dialects, run programmatically through Alembic.

Alembic takes 0.15–0.3 s to import, a short command's whole budget: the check every command
makes at start-up (`ensure_schema`) tells a database at the head without it, from the version
table and the revision ids the migration scripts declare, and loads Alembic only to migrate or
to report a schema that is not at the head.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from valuerank.db.engine import Database
from valuerank.errors import ValueRankError

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
# Where Alembic keeps the database's revision: its default table, which env.py keeps.
VERSION_TABLE = "alembic_version"
# A script's `revision: str = "…"` and `down_revision: str | None = "…"` lines (the form
# script.py.mako writes); a down_revision may also be None or a tuple (a merge).
_DECLARATION = re.compile(r"^(revision|down_revision)\b[^=\n]*=\s*(.+?)\s*$", re.MULTILINE)
_QUOTED = re.compile(r"""["']([^"']+)["']""")


class SchemaOutOfDateError(RuntimeError):
    """The database schema is behind this version of ValueRank."""


class SchemaNotReadyError(ValueRankError):
    """Readiness: the database answers, but its schema is not the one this code needs."""

    code = "SCHEMA_NOT_READY"
    http_status = 503


def alembic_config(connection: Connection | None = None) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None, "no migrations found"
    return head


@functools.cache
def script_head() -> str | None:
    """The head revision as the migration scripts declare it, read as text (importing them
    would import Alembic): the one revision no script revises. None when the scripts do not
    say it plainly (a script without the two lines, several heads): then Alembic decides.
    `head_revision()` is the authority; tests hold the two equal."""
    revisions: set[str] = set()
    revised: set[str] = set()
    for script in (MIGRATIONS_DIR / "versions").glob("*.py"):
        if script.name.startswith((".", "__")):  # what Alembic skips: editor locks, __init__
            continue
        try:
            declared = dict(_DECLARATION.findall(script.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError):
            return None
        found = _QUOTED.findall(declared.get("revision", ""))
        if len(found) != 1 or "down_revision" not in declared:
            return None
        revisions.add(found[0])
        revised.update(_QUOTED.findall(declared["down_revision"]))
    heads = revisions - revised
    return heads.pop() if len(heads) == 1 else None


async def _at_head(db: Database) -> str | None:
    """The head revision if the database is at it, told without Alembic; None when it is
    not, or when this cannot tell (no version table yet, several revisions in it)."""
    head = script_head()
    if head is None:
        return None
    async with db.engine.connect() as conn:
        try:
            stored = (await conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}"))).all()
        except DBAPIError:  # no version table: never migrated
            return None
    return head if [row[0] for row in stored] == [head] else None


async def current_revision(db: Database) -> str | None:
    from alembic.runtime.migration import MigrationContext

    def _read(sync_conn: Connection) -> str | None:
        return MigrationContext.configure(sync_conn).get_current_revision()

    async with db.engine.connect() as conn:
        return await conn.run_sync(_read)


async def upgrade(db: Database, revision: str = "head") -> tuple[str | None, str]:
    """Apply migrations up to `revision`; returns (revision before, revision after)."""
    from alembic import command

    before = await current_revision(db)

    def _upgrade(sync_conn: Connection) -> None:
        command.upgrade(alembic_config(sync_conn), revision)

    async with db.transaction(immediate=True) as conn:
        await conn.run_sync(_upgrade)
    after = await current_revision(db)
    assert after is not None
    return before, after


async def ensure_schema(db: Database) -> None:
    """Make the schema usable: an embedded SQLite database is upgraded in place;
    a PostgreSQL database must be upgraded on purpose (`valuerank db upgrade`)."""
    if await _at_head(db) is not None:
        return
    current = await current_revision(db)
    if current == head_revision():
        return
    if db.url.is_sqlite:
        await upgrade(db)
        return
    raise SchemaOutOfDateError(
        f"database {db.url.render()} is at schema revision {current or 'none'}, "
        f"this ValueRank needs {head_revision()}: run `valuerank db upgrade`"
    )


async def check_ready(db: Database) -> dict[str, str]:
    """Readiness of `db` for this code: it answers (else the driver's error propagates: the
    API answers 503 DATABASE_UNAVAILABLE) and its schema is at the head revision (else
    `SchemaNotReadyError`). Returns the revision. Never migrates anything."""
    at_head = await _at_head(db)
    if at_head is not None:
        return {"revision": at_head, "head": at_head}
    current = await current_revision(db)
    head = head_revision()
    if current != head:
        raise SchemaNotReadyError(
            f"the database schema is at revision {current or 'none'}, this ValueRank needs {head}",
            hint="run `valuerank db upgrade` (an embedded SQLite database is upgraded at start)",
        )
    return {"revision": current, "head": head}
