"""0007_accounts alters `users` in place: users and memberships made before it survive the
upgrade and the downgrade on both databases (a copy of `users` on SQLite would have dropped
the table and, with foreign keys on, cascaded into `memberships`)."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import command
from sqlalchemy import Connection

from valuerank.db import Database
from valuerank.db.migrate import alembic_config, head_revision, upgrade

BEFORE = "0006_webhook_secret_encrypted"


async def _downgrade(db: Database, revision: str) -> None:
    def _down(sync_conn: Connection) -> None:
        command.downgrade(alembic_config(sync_conn), revision)

    async with db.transaction(immediate=True) as conn:
        await conn.run_sync(_down)


async def _memberships(db: Database) -> list[tuple[str, str, str]]:
    async with db.transaction() as conn:
        rows = await conn.execute(
            sa.text(
                "SELECT u.email, m.role, o.slug FROM memberships m "
                "JOIN users u ON u.id = m.user_id JOIN orgs o ON o.id = m.org_id"
            )
        )
        return [tuple(r) for r in rows]


async def test_users_and_memberships_survive_0007_both_ways(empty_db: Database) -> None:
    await upgrade(empty_db, BEFORE)
    async with empty_db.transaction() as conn:
        await conn.execute(sa.text("INSERT INTO orgs (id, slug, name) VALUES ('o', 'lab', 'Lab')"))
        await conn.execute(
            sa.text("INSERT INTO users (id, email, name) VALUES ('u', 'ada@example.org', 'Ada')")
        )
        await conn.execute(
            sa.text("INSERT INTO memberships (org_id, user_id, role) VALUES ('o', 'u', 'admin')")
        )
    assert (await upgrade(empty_db))[1] == head_revision()
    assert await _memberships(empty_db) == [("ada@example.org", "admin", "lab")]
    async with empty_db.transaction() as conn:
        row = (await conn.execute(sa.text("SELECT password_hash, last_login_at FROM users"))).one()
    assert tuple(row) == (None, None)  # a token-only user until a password is set

    await _downgrade(empty_db, BEFORE)
    assert await _memberships(empty_db) == [("ada@example.org", "admin", "lab")]

    def _tables(sync_conn: Connection) -> set[str]:
        return set(sa.inspect(sync_conn).get_table_names())

    async with empty_db.engine.connect() as conn:
        tables = await conn.run_sync(_tables)
    assert "api_tokens" not in tables and "sessions" not in tables
