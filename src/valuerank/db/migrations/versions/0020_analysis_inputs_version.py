"""analysis inputs version: `runs.inputs_version` is bumped by every write that changes what
a run's analysis reads, and `analyses.inputs_version` records the version an analysis was
computed at, so a cached analysis is known current without reading the run's transcripts

Revision ID: 0020_analysis_inputs_version
Revises: 0019_pruned_runs
Create Date: 2026-11-29 14:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020_analysis_inputs_version"
down_revision: str | None = "0019_pruned_runs"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "runs", sa.Column("inputs_version", sa.Integer(), server_default="0", nullable=False)
    )
    # Existing rows have none: their first read loads the inputs once and records it.
    op.add_column("analyses", sa.Column("inputs_version", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("analyses") as batch:
        batch.drop_column("inputs_version")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("inputs_version")
