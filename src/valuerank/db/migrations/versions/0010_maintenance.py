"""maintenance: what each pass did and who asked; anomaly alerts sent once per organisation

Revision ID: 0010_maintenance
Revises: 0009_analysis
Create Date: 2026-11-25 08:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0010_maintenance"
down_revision: str | None = "0009_analysis"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    # Plain ADD COLUMN with a constant default works on both dialects (no table rebuild);
    # the rows written before this migration were all the workers' full passes.
    op.add_column(
        "maintenance_runs",
        sa.Column("kind", sa.String(length=32), server_default="full", nullable=False),
    )
    op.add_column(
        "maintenance_runs",
        sa.Column("trigger", sa.String(length=16), server_default="worker", nullable=False),
    )
    op.create_index(
        op.f("ix_maintenance_runs_started_at_id"),
        "maintenance_runs",
        ["started_at", "id"],
        unique=False,
    )
    op.create_table(
        "maintenance_alerts",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("org_id", sa.String(length=36), nullable=False),
        sa.Column("anomaly_key", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("detail", JSON, nullable=False),
        sa.Column("outbox_ids", JSON, nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["org_id"],
            ["orgs.id"],
            name=op.f("fk_maintenance_alerts_org_id_orgs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_maintenance_alerts")),
        sa.UniqueConstraint(
            "org_id", "anomaly_key", name=op.f("uq_maintenance_alerts_org_id_anomaly_key")
        ),
    )


def downgrade() -> None:
    op.drop_table("maintenance_alerts")
    op.drop_index(op.f("ix_maintenance_runs_started_at_id"), table_name="maintenance_runs")
    with op.batch_alter_table("maintenance_runs") as batch:  # SQLite drops columns by rebuild
        batch.drop_column("trigger")
        batch.drop_column("kind")
