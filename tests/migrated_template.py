"""Migrated databases for tests, fast: the real migrations run once per test process, into a
template, and each test gets a copy of it.

Running the migrations costs 0.4–0.9 s per test (Alembic's Python more than the DDL), and
most storage tests need a migrated database only as their starting point. The migrations
themselves stay tested where they are the subject (tests/db, tests that upgrade from an older
revision), and `tests/test_migrated_template.py` holds a copy equal to a freshly migrated one.

- SQLite: the template is a file, copied.
- PostgreSQL: the template is a schema, dumped once with `pg_dump` (schema and rows, as plain
  SQL) and replayed into each test's schema with its name in place of the template's.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import uuid
import warnings
from pathlib import Path

import psycopg

from valuerank.db import create_database
from valuerank.db.migrate import upgrade

_sqlite_template: Path | None = None
_postgres_script: tuple[str, str] | None = None  # (template schema name, its dump)


async def sqlite_copy(target: Path, workdir: Path) -> None:
    """Make `target` a migrated SQLite database."""
    global _sqlite_template
    if _sqlite_template is None:
        template = workdir / f"migrated-{uuid.uuid4().hex[:8]}.db"
        # The last connection's close (dispose) checkpoints and removes the WAL.
        await migrate(f"sqlite:///{template}")
        _sqlite_template = template
    shutil.copyfile(_sqlite_template, target)


def dump_schema(libpq_url: str, schema: str) -> str:
    done = subprocess.run(
        ["pg_dump", "--schema", schema, "--inserts", "--no-owner", "--no-privileges", libpq_url],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def _replayable(dump: str, schema: str) -> str:
    """The dump as one script for psycopg: without psql's meta-commands (`\\restrict`), the
    schema's own creation (each test's schema exists already) and the search_path reset."""
    kept = []
    for line in dump.splitlines():
        if line.startswith("\\") or line.startswith(f"CREATE SCHEMA {schema};"):
            continue
        if "set_config('search_path'" in line:
            continue
        kept.append(line)
    return "\n".join(kept)


async def migrate(url: str) -> None:
    """Run the real migrations on the database at `url`."""
    db = create_database(url)
    try:
        await upgrade(db)
    finally:
        await db.dispose()


async def postgres_copy(libpq_url: str, sqlalchemy_url: str, schema: str) -> None:
    """Make the (empty) schema `schema` a migrated one. `sqlalchemy_url` reaches the
    database with its search_path on a schema of the caller's: the template is made in
    one of its own. Without a usable `pg_dump` (not installed, or older than the server),
    each test's schema is migrated instead: slower, the same schema."""
    global _postgres_script
    if _postgres_script is None:
        if shutil.which("pg_dump") is None:
            _postgres_script = ("", "")
        else:
            _postgres_script = await _make_script(libpq_url, sqlalchemy_url, schema)
    template, script = _postgres_script
    if not script:
        await migrate(sqlalchemy_url)
        return
    # Schema names are generated (vr_[a-z_0-9]+), so the template's occurs nowhere else.
    script = re.sub(rf"\b{template}\b", schema, script)
    with psycopg.connect(libpq_url, autocommit=True) as conn:
        conn.execute(script.encode())  # one round trip: many statements, no parameters


async def _make_script(libpq_url: str, sqlalchemy_url: str, schema: str) -> tuple[str, str]:
    """(template schema, the script that recreates it), or ("", "") if pg_dump fails."""
    template = f"vr_template_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(libpq_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{template}"')
    try:
        await migrate(sqlalchemy_url.replace(schema, template))
        try:
            dump = dump_schema(libpq_url, template)
        except subprocess.CalledProcessError as exc:
            warnings.warn(
                f"pg_dump failed, migrating each test's schema: {exc.stderr}", stacklevel=1
            )
            return "", ""
        return template, _replayable(dump, template)
    finally:
        with psycopg.connect(libpq_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{template}" CASCADE')
