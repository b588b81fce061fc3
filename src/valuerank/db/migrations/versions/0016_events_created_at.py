"""events pruned by age: an index on created_at, so maintenance finds the oldest events
without reading the table (VALUERANK_WORKER_EVENT_RETENTION_DAYS)

Revision ID: 0016_events_created_at
Revises: 0015_validation_change_notify
Create Date: 2026-11-28 02:40:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0016_events_created_at"
down_revision: str | None = "0015_validation_change_notify"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_events_created_at", "events", ["created_at"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_events_created_at", table_name="events")
