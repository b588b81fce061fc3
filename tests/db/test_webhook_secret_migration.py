"""Migration 0006 on both dialects: plaintext webhook secrets are encrypted with the key when
it is set, else erased with their webhook deactivated; never kept in plaintext."""

from __future__ import annotations

import logging

import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection

from valuerank.crypto import SecretCipher, SecretKeyInvalid, generate_key
from valuerank.db import Database
from valuerank.db.migrate import alembic_config, current_revision, head_revision, upgrade
from valuerank.db.tables import outbox
from valuerank.orgs import ensure_org

BEFORE = "0005_queue_counters"
SECRET = "whsec-plaintext-from-before-0006"

# The webhooks table as revision 0005 left it (the code's tables.py describes the new one).
OLD_WEBHOOKS = sa.table(
    "webhooks",
    sa.column("id", sa.String),
    sa.column("org_id", sa.String),
    sa.column("url", sa.Text),
    sa.column("secret", sa.Text),
    sa.column("event_types", sa.JSON().with_variant(postgresql.JSONB(), "postgresql")),
    sa.column("active", sa.Boolean),
)


async def _at_0005_with_webhooks(db: Database) -> None:
    await upgrade(db, BEFORE)
    async with db.transaction() as conn:
        org_id = await ensure_org(conn, "default")
        await conn.execute(
            sa.insert(OLD_WEBHOOKS),
            [
                {
                    "id": "signed",
                    "org_id": org_id,
                    "url": "https://example.invalid/a",
                    "secret": SECRET,
                    "event_types": [],
                    "active": True,
                },
                {
                    "id": "unsigned",
                    "org_id": org_id,
                    "url": "https://example.invalid/b",
                    "secret": None,
                    "event_types": ["task_complete"],
                    "active": True,
                },
            ],
        )
        await conn.execute(
            sa.insert(outbox).values(
                id="n1", org_id=org_id, webhook_id="signed", topic="t", payload={}
            )
        )


async def _rows(db: Database, column: str) -> dict[str, tuple[str | None, bool]]:
    async with db.transaction() as conn:
        rows = await conn.execute(sa.text(f"SELECT id, {column}, active FROM webhooks"))
        return {r[0]: (r[1], bool(r[2])) for r in rows}


async def _outbox_ids(db: Database) -> list[str]:
    async with db.transaction() as conn:
        return list((await conn.scalars(sa.select(outbox.c.id))).all())


async def _columns(db: Database) -> set[str]:
    def _read(sync_conn: Connection) -> set[str]:
        return {c["name"] for c in sa.inspect(sync_conn).get_columns("webhooks")}

    async with db.engine.connect() as conn:
        return await conn.run_sync(_read)


async def _downgrade(db: Database, revision: str) -> None:
    def _down(sync_conn: Connection) -> None:
        command.downgrade(alembic_config(sync_conn), revision)

    async with db.transaction(immediate=True) as conn:
        await conn.run_sync(_down)


async def test_with_the_key_secrets_are_encrypted_and_come_back_on_downgrade(
    empty_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = generate_key()
    monkeypatch.setenv("VALUERANK_SECRET_KEY", key)
    await _at_0005_with_webhooks(empty_db)
    assert (await upgrade(empty_db))[1] == head_revision()
    columns = await _columns(empty_db)
    assert "secret_encrypted" in columns and "secret" not in columns
    rows = await _rows(empty_db, "secret_encrypted")
    token, active = rows["signed"]
    assert active and token is not None and SECRET not in token
    assert SecretCipher(key).decrypt(token) == SECRET
    assert rows["unsigned"] == (None, True)
    # The column is renamed in place: no copy of the table, whose DROP would have cascaded
    # into the outbox on SQLite.
    assert await _outbox_ids(empty_db) == ["n1"]

    await _downgrade(empty_db, BEFORE)
    assert await _rows(empty_db, "secret") == {
        "signed": (SECRET, True),
        "unsigned": (None, True),
    }
    assert await _outbox_ids(empty_db) == ["n1"]


async def test_without_the_key_secrets_are_erased_and_webhooks_deactivated(
    empty_db: Database, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("VALUERANK_SECRET_KEY", raising=False)
    await _at_0005_with_webhooks(empty_db)
    with caplog.at_level(logging.WARNING, logger="valuerank.migrations"):
        await upgrade(empty_db)
    assert await _rows(empty_db, "secret_encrypted") == {
        "signed": (None, False),
        "unsigned": (None, True),  # nothing to carry over: untouched
    }
    (record,) = [r for r in caplog.records if r.name == "valuerank.migrations"]
    message = record.getMessage()
    assert "signed" in message and "deactivated" in message
    assert "VALUERANK_SECRET_KEY is not set" in message
    assert SECRET not in caplog.text
    assert await _outbox_ids(empty_db) == ["n1"]  # pending, waiting for the webhook


async def test_an_invalid_key_stops_the_upgrade_and_changes_nothing(
    empty_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VALUERANK_SECRET_KEY", "too short")
    await _at_0005_with_webhooks(empty_db)
    with pytest.raises(SecretKeyInvalid):
        await upgrade(empty_db)
    assert await current_revision(empty_db) == BEFORE
    assert (await _rows(empty_db, "secret"))["signed"] == (SECRET, True)


async def test_downgrade_with_another_key_erases_rather_than_guesses(
    empty_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VALUERANK_SECRET_KEY", generate_key())
    await _at_0005_with_webhooks(empty_db)
    await upgrade(empty_db)
    monkeypatch.setenv("VALUERANK_SECRET_KEY", generate_key())
    await _downgrade(empty_db, BEFORE)
    assert await _rows(empty_db, "secret") == {
        "signed": (None, False),
        "unsigned": (None, True),
    }
