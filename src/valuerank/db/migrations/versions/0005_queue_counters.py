"""queue: per-partition job counters on queue_controls, per-partition claim index

Revision ID: 0005_queue_counters
Revises: 0004_pipeline
Create Date: 2026-11-22 02:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005_queue_counters"
down_revision: str | None = "0004_pipeline"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

STATUSES = ("queued", "running", "succeeded", "failed", "cancelled")


def upgrade() -> None:
    with op.batch_alter_table("queue_controls", schema=None) as batch_op:
        for status in STATUSES:
            batch_op.add_column(
                sa.Column(f"jobs_{status}", sa.Integer(), server_default="0", nullable=False)
            )
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.create_index(
            "ix_jobs_queued_partition",
            ["partition", sa.text("priority DESC"), "run_at", "created_at", "id"],
            unique=False,
            postgresql_where=sa.text("status = 'queued'"),
            sqlite_where=sa.text("status = 'queued'"),
        )
    # Every partition holding jobs gets its row (enqueue creates it; this covers any other
    # way in), then the counters start from the jobs as they are.
    op.execute(
        "INSERT INTO queue_controls (scope, key, org_id, paused, cancel_requested, last_seq) "
        "SELECT 'partition', j.partition, MIN(j.org_id), false, false, 0 FROM jobs j "
        "WHERE NOT EXISTS (SELECT 1 FROM queue_controls q "
        "WHERE q.scope = 'partition' AND q.key = j.partition) "
        "GROUP BY j.partition"
    )
    counts = ", ".join(
        f"jobs_{s} = (SELECT COUNT(*) FROM jobs j "
        f"WHERE j.partition = queue_controls.key AND j.status = '{s}')"
        for s in STATUSES
    )
    op.execute(f"UPDATE queue_controls SET {counts} WHERE scope = 'partition'")


def downgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_index("ix_jobs_queued_partition")
    with op.batch_alter_table("queue_controls", schema=None) as batch_op:
        for status in reversed(STATUSES):
            batch_op.drop_column(f"jobs_{status}")
