"""concurrency caps: mark the per-organisation caps the workers' default made
(VALUERANK_WORKER_ORG_CONCURRENCY), so that changing the default to another value or to 0
(no cap) changes or lifts them, and leaves caps set for one organisation alone

Revision ID: 0017_slot_defaults
Revises: 0016_events_created_at
Create Date: 2026-11-29 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017_slot_defaults"
down_revision: str | None = "0016_events_created_at"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("queue_slots") as batch:
        batch.add_column(
            sa.Column("is_default", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    # Every organisation cap so far came from the workers' default: nothing else set them.
    op.execute("UPDATE queue_slots SET is_default = TRUE WHERE scope = 'org'")


def downgrade() -> None:
    with op.batch_alter_table("queue_slots") as batch:
        batch.drop_column("is_default")
