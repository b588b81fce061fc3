"""Alembic environment: runs on the connection ValueRank hands over (see db/migrate.py)."""

from __future__ import annotations

from alembic import context

from valuerank.db.tables import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError(
        "run migrations through `valuerank db upgrade` (valuerank.db.migrate), not bare alembic"
    )

context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",  # SQLite alters tables by copy
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
