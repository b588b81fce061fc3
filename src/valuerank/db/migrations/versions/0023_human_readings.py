"""human readings: a person's reading of a transcript (values prioritised and deprioritised),
kept beside the judges' judgments (db/tables.py `human_readings`)

Revision ID: 0023_human_readings
Revises: 0022_org_defaults
Create Date: 2026-12-07 06:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0023_human_readings"
down_revision: str | None = "0022_org_defaults"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSONDocument = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "human_readings",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("org_id", sa.String(length=36), nullable=False),
        sa.Column("transcript_id", sa.String(length=36), nullable=False),
        sa.Column("user_id", sa.String(length=36), nullable=False),
        sa.Column("prioritized_values", JSONDocument, nullable=False),
        sa.Column("deprioritized_values", JSONDocument, nullable=False),
        sa.Column("note", sa.Text(), server_default="", nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.func.now(),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["org_id"], ["orgs.id"], name=op.f("fk_human_readings_org_id_orgs"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["transcript_id"],
            ["transcripts.id"],
            name=op.f("fk_human_readings_transcript_id_transcripts"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_human_readings_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_human_readings")),
        sa.UniqueConstraint(
            "transcript_id", "user_id", name=op.f("uq_human_readings_transcript_id_user_id")
        ),
    )
    op.create_index(
        "ix_human_readings_org_id_user_id", "human_readings", ["org_id", "user_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_human_readings_org_id_user_id", table_name="human_readings")
    op.drop_table("human_readings")
