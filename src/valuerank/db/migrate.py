"""Schema migrations on both dialects, run programmatically through Alembic."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection

from valuerank.db.engine import Database
from valuerank.errors import ValueRankError

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


class SchemaOutOfDateError(RuntimeError):
    """The database schema is behind this version of ValueRank."""


class SchemaNotReadyError(ValueRankError):
    """Readiness: the database answers, but its schema is not the one this code needs."""

    code = "SCHEMA_NOT_READY"
    http_status = 503


def alembic_config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None, "no migrations found"
    return head


async def current_revision(db: Database) -> str | None:
    def _read(sync_conn: Connection) -> str | None:
        return MigrationContext.configure(sync_conn).get_current_revision()

    async with db.engine.connect() as conn:
        return await conn.run_sync(_read)


async def upgrade(db: Database, revision: str = "head") -> tuple[str | None, str]:
    """Apply migrations up to `revision`; returns (revision before, revision after)."""
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
    current = await current_revision(db)
    head = head_revision()
    if current != head:
        raise SchemaNotReadyError(
            f"the database schema is at revision {current or 'none'}, this ValueRank needs {head}",
            hint="run `valuerank db upgrade` (an embedded SQLite database is upgraded at start)",
        )
    return {"revision": current, "head": head}
