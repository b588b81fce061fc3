"""0014 and 0015 add the triggers that NOTIFY the API's caches on PostgreSQL (nothing on
SQLite); both downgrade cleanly and upgrade again."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import command
from sqlalchemy import Connection

from valuerank.db import Database
from valuerank.db.migrate import alembic_config, current_revision, head_revision, upgrade

BEFORE = "0013_response_cache_created_at"
TRIGGERS = {
    "api_tokens_auth_update",
    "api_tokens_auth_delete",
    "memberships_auth_change",
    "validation_tasks_head_update",
    "validation_tasks_head_delete",
    "validation_tasks_head_truncate",
}


async def _triggers(db: Database) -> set[str]:
    if db.dialect != "postgresql":
        return set()
    async with db.transaction() as conn:
        rows = await conn.execute(
            sa.text(
                "SELECT tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE NOT t.tgisinternal AND n.nspname = current_schema()"
            )
        )
        return {row.tgname for row in rows}


async def _downgrade(db: Database, revision: str) -> None:
    def _down(sync_conn: Connection) -> None:
        command.downgrade(alembic_config(sync_conn), revision)

    async with db.transaction(immediate=True) as conn:
        await conn.run_sync(_down)


async def test_the_triggers_come_and_go_with_their_migrations(empty_db: Database) -> None:
    await upgrade(empty_db)
    expected = TRIGGERS if empty_db.dialect == "postgresql" else set()
    assert await _triggers(empty_db) == expected
    await _downgrade(empty_db, BEFORE)
    assert await current_revision(empty_db) == BEFORE
    assert await _triggers(empty_db) == set()
    assert (await upgrade(empty_db))[1] == head_revision()
    assert await _triggers(empty_db) == expected
