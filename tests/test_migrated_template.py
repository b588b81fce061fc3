"""The `db` fixture's copy of a template is the database the migrations make: same tables,
indexes, constraints, triggers, functions and rows, on both backends."""

from __future__ import annotations

import re
import shutil
import sqlite3
import subprocess
from pathlib import Path

from tests.conftest import PG_URL, TestDatabase, _libpq_url, fresh_database, missing_prerequisite
from tests.migrated_template import dump_schema, migrate

from valuerank.db import Database
from valuerank.db.migrate import current_revision, head_revision


def _sqlite_dump(url: str) -> str:
    with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
        statements = list(conn.iterdump())
    # SQLite's batch migrations rebuild tables with their constraints in an order that varies
    # from one run of the migrations to the next: compare each statement's lines as a set.
    return "\n".join(
        ";".join(sorted(s.rstrip(",").strip() for s in statement.split("\n")))
        for statement in statements
    )


def _schema_dump(schema: str) -> str:
    if shutil.which("pg_dump") is None:
        missing_prerequisite("pg_dump (PostgreSQL's client tools) is not installed")
    try:
        dump = dump_schema(_libpq_url(PG_URL), schema)
    except subprocess.CalledProcessError as exc:  # e.g. a pg_dump older than the server
        missing_prerequisite(f"pg_dump failed: {exc.stderr.strip()}")
    dump = re.sub(r"^\\(un)?restrict .*$", "", dump, flags=re.MULTILINE)  # a random key
    dump = re.sub(rf"\b{schema}\b", "SCHEMA", dump)
    # PostgreSQL prints a CHECK constraint it has read back with other casts and parentheses
    # (`(ARRAY['a'::character varying])::text[]` becomes `ARRAY[('a'::character varying)::text]`):
    # the same constraint, so compare those lines without casts and parentheses.
    return "\n".join(
        re.sub(r"::[a-z ]+(\[\])?|[()\s]", "", line) if "CHECK" in line else line
        for line in dump.splitlines()
    )


def _dump_of(database: TestDatabase) -> str:
    if database.backend == "sqlite":
        return _sqlite_dump(database.url)
    return _schema_dump(database.schema)


async def test_a_copy_equals_a_freshly_migrated_database(
    db: Database, database_url: TestDatabase, tmp_path: Path
) -> None:
    assert await current_revision(db) == head_revision()
    with fresh_database(database_url.backend, tmp_path / "migrated") as other:
        (tmp_path / "migrated").mkdir(exist_ok=True)
        await migrate(other.url)
        copied, expected = _dump_of(database_url), _dump_of(other)
    assert "CREATE TABLE" in expected and "alembic_version" in expected
    assert copied == expected
