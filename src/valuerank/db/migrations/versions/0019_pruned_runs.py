"""pruned runs: a run keeps its final counts and failures when maintenance prunes its jobs.
`runs.pruned_jobs` counts the pruned jobs per kind and status, `pruned_failures` keeps the
failed ones as the run's failure listing shows them

Revision ID: 0019_pruned_runs
Revises: 0018_invitations
Create Date: 2026-11-29 13:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0019_pruned_runs"
down_revision: str | None = "0018_invitations"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID = sa.String(36)
WHEN = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.add_column(
        "runs",
        sa.Column(
            "pruned_jobs",
            sa.JSON().with_variant(postgresql.JSONB(), "postgresql"),
            server_default="{}",
            nullable=False,
        ),
    )
    op.create_table(
        "pruned_failures",
        sa.Column("job_id", ID, nullable=False),
        sa.Column("org_id", ID, nullable=False),
        sa.Column("run_id", ID, nullable=False),
        sa.Column("kind", sa.String(100), nullable=False),
        sa.Column("scenario_id", sa.String(300), nullable=True),
        sa.Column("model", sa.String(300), nullable=True),
        sa.Column("provider", sa.String(100), nullable=True),
        sa.Column("transcript_id", sa.String(300), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("max_attempts", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", WHEN, nullable=False),
        sa.Column("finished_at", WHEN, nullable=True),
        sa.ForeignKeyConstraint(
            ["org_id"], ["orgs.id"], name="fk_pruned_failures_org_id_orgs", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name="fk_pruned_failures_run_id_runs", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("job_id", name="pk_pruned_failures"),
    )
    op.create_index(
        "ix_pruned_failures_run_id_created_at", "pruned_failures", ["run_id", "created_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_pruned_failures_run_id_created_at", table_name="pruned_failures")
    op.drop_table("pruned_failures")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("pruned_jobs")
