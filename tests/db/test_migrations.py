"""Migrations run on both dialects and produce exactly the schema the code describes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, inspect, text

from valuerank.db import Database, create_database
from valuerank.db.migrate import (
    SchemaNotReadyError,
    SchemaOutOfDateError,
    alembic_config,
    check_ready,
    current_revision,
    ensure_schema,
    head_revision,
    script_head,
    upgrade,
)
from valuerank.db.tables import metadata


async def test_upgrade_from_empty_reaches_head(empty_db: Database) -> None:
    assert await current_revision(empty_db) is None
    before, after = await upgrade(empty_db)
    assert before is None
    assert after == head_revision()
    # A second upgrade is a no-op.
    assert await upgrade(empty_db) == (head_revision(), head_revision())


async def test_migrated_schema_matches_table_definitions(db: Database) -> None:
    def _diff(sync_conn: Connection) -> list[Any]:
        diff: list[Any] = compare_metadata(MigrationContext.configure(sync_conn), metadata)
        return diff

    async with db.engine.connect() as conn:
        assert await conn.run_sync(_diff) == []


async def test_every_tenant_table_has_org_id(db: Database) -> None:
    def _tables(sync_conn: Connection) -> dict[str, list[str]]:
        insp = inspect(sync_conn)
        return {t: [c["name"] for c in insp.get_columns(t)] for t in insp.get_table_names()}

    async with db.engine.connect() as conn:
        tables = await conn.run_sync(_tables)
    # The model registry is shared reference data (names, prices), not tenant data.
    global_tables = {"orgs", "users", "models", "alembic_version"}
    for name, columns in tables.items():
        if name not in global_tables:
            assert "org_id" in columns, name


async def test_ensure_schema_upgrades_embedded_sqlite(tmp_path: Path) -> None:
    db = create_database(f"sqlite:///{tmp_path / 'auto.db'}")
    try:
        await ensure_schema(db)
        assert await current_revision(db) == head_revision()
    finally:
        await db.dispose()


async def test_ensure_schema_migrates_sqlite_but_never_postgresql_silently(
    empty_db: Database,
) -> None:
    if empty_db.url.is_sqlite:
        await ensure_schema(empty_db)
        assert await current_revision(empty_db) == head_revision()
    else:
        with pytest.raises(SchemaOutOfDateError, match="valuerank db upgrade"):
            await ensure_schema(empty_db)
        assert await current_revision(empty_db) is None


def test_the_scripts_head_read_as_text_is_alembics_head() -> None:
    # The start-up check tells a database at the head without importing Alembic, from the
    # revision ids the scripts declare: the same head Alembic computes from them.
    assert script_head() == head_revision()


async def test_the_start_up_check_tells_each_revision_from_the_head(empty_db: Database) -> None:
    head = head_revision()
    previous = ScriptDirectory.from_config(alembic_config()).get_revision(head).down_revision
    assert isinstance(previous, str)
    with pytest.raises(SchemaNotReadyError, match="revision none"):
        await check_ready(empty_db)
    await upgrade(empty_db, previous)
    with pytest.raises(SchemaNotReadyError, match=f"revision {previous},.* needs {head}"):
        await check_ready(empty_db)
    if empty_db.url.is_sqlite:
        await ensure_schema(empty_db)  # an embedded database behind the head is upgraded
    else:
        with pytest.raises(SchemaOutOfDateError, match=f"revision {previous},"):
            await ensure_schema(empty_db)
        await upgrade(empty_db)
    assert await check_ready(empty_db) == {"revision": head, "head": head}
    await ensure_schema(empty_db)
    assert await current_revision(empty_db) == head


async def test_sqlite_runs_in_wal_mode_with_busy_timeout(tmp_path: Path) -> None:
    db = create_database(f"sqlite:///{tmp_path / 'wal.db'}", busy_timeout_ms=1234)
    try:
        async with db.transaction() as conn:
            assert (await conn.scalar(text("PRAGMA journal_mode"))) == "wal"
            assert (await conn.scalar(text("PRAGMA busy_timeout"))) == 1234
            assert (await conn.scalar(text("PRAGMA foreign_keys"))) == 1
    finally:
        await db.dispose()
