"""analysis: analyses (cached per run and kind), comparisons, experiments and their variants

Revision ID: 0009_analysis
Revises: 0008_validation
Create Date: 2026-11-25 05:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0009_analysis"
down_revision: str | None = "0008_validation"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def _id() -> sa.Column[str]:
    return sa.Column("id", sa.String(length=36), nullable=False)


def _org_id() -> sa.Column[str]:
    return sa.Column("org_id", sa.String(length=36), nullable=False)


def _created_at() -> sa.Column[datetime]:
    return sa.Column(
        "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
    )


def _fk(table: str, column: str, target: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column],
        [f"{target}.id"],
        name=op.f(f"fk_{table}_{column}_{target}"),
        ondelete="CASCADE",
    )


def upgrade() -> None:
    op.create_table(
        "analyses",
        _id(),
        _org_id(),
        sa.Column("run_id", sa.String(length=36), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("input_hash", sa.String(length=64), nullable=False),
        sa.Column("code_version", sa.String(length=32), nullable=False),
        sa.Column("result", JSON, nullable=False),
        sa.Column("narrative", sa.Text(), nullable=True),
        sa.Column("duration_ms", sa.Float(), server_default="0", nullable=False),
        _created_at(),
        _fk("analyses", "org_id", "orgs"),
        _fk("analyses", "run_id", "runs"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_analyses")),
        sa.UniqueConstraint("run_id", "kind", name=op.f("uq_analyses_run_id_kind")),
    )
    with op.batch_alter_table("analyses", schema=None) as batch_op:
        batch_op.create_index("ix_analyses_org_id_run_id", ["org_id", "run_id"], unique=False)

    op.create_table(
        "comparisons",
        _id(),
        _org_id(),
        sa.Column("baseline_run_id", sa.String(length=36), nullable=False),
        sa.Column("comparison_run_id", sa.String(length=36), nullable=False),
        sa.Column("status", sa.String(length=16), server_default="queued", nullable=False),
        sa.Column("options", JSON, nullable=False),
        sa.Column("input_hash", sa.String(length=64), nullable=True),
        sa.Column("code_version", sa.String(length=32), nullable=True),
        sa.Column("result", JSON, nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        _created_at(),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        _fk("comparisons", "org_id", "orgs"),
        _fk("comparisons", "baseline_run_id", "runs"),
        _fk("comparisons", "comparison_run_id", "runs"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_comparisons")),
    )
    with op.batch_alter_table("comparisons", schema=None) as batch_op:
        batch_op.create_index(
            "ix_comparisons_org_id_baseline_run_id", ["org_id", "baseline_run_id"], unique=False
        )
        batch_op.create_index(
            "ix_comparisons_org_id_comparison_run_id",
            ["org_id", "comparison_run_id"],
            unique=False,
        )

    op.create_table(
        "experiments",
        _id(),
        _org_id(),
        sa.Column("name", sa.String(length=300), nullable=False),
        sa.Column("hypothesis", sa.Text(), server_default="", nullable=False),
        sa.Column("baseline_run_id", sa.String(length=36), nullable=False),
        _created_at(),
        _fk("experiments", "org_id", "orgs"),
        _fk("experiments", "baseline_run_id", "runs"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_experiments")),
    )
    with op.batch_alter_table("experiments", schema=None) as batch_op:
        batch_op.create_index(
            "ix_experiments_org_id_created_at", ["org_id", "created_at"], unique=False
        )

    op.create_table(
        "experiment_variants",
        _org_id(),
        sa.Column("experiment_id", sa.String(length=36), nullable=False),
        sa.Column("run_id", sa.String(length=36), nullable=False),
        sa.Column("changes", JSON, nullable=False),
        _created_at(),
        _fk("experiment_variants", "org_id", "orgs"),
        _fk("experiment_variants", "experiment_id", "experiments"),
        _fk("experiment_variants", "run_id", "runs"),
        sa.PrimaryKeyConstraint("experiment_id", "run_id", name=op.f("pk_experiment_variants")),
    )


def downgrade() -> None:
    op.drop_table("experiment_variants")
    with op.batch_alter_table("experiments", schema=None) as batch_op:
        batch_op.drop_index("ix_experiments_org_id_created_at")
    op.drop_table("experiments")
    with op.batch_alter_table("comparisons", schema=None) as batch_op:
        batch_op.drop_index("ix_comparisons_org_id_comparison_run_id")
        batch_op.drop_index("ix_comparisons_org_id_baseline_run_id")
    op.drop_table("comparisons")
    with op.batch_alter_table("analyses", schema=None) as batch_op:
        batch_op.drop_index("ix_analyses_org_id_run_id")
    op.drop_table("analyses")
