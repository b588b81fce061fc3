"""organisation defaults: `org_defaults` holds the judges and the summary model an
organisation's new runs get when they name none (one row per organisation)

Revision ID: 0022_org_defaults
Revises: 0021_transcript_search
Create Date: 2026-12-07 06:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0022_org_defaults"
down_revision: str | None = "0021_transcript_search"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "org_defaults",
        sa.Column("org_id", sa.String(36), nullable=False),
        sa.Column(
            "judge_models",
            sa.JSON().with_variant(postgresql.JSONB(), "postgresql"),
            server_default="[]",
            nullable=False,
        ),
        sa.Column("summary_model", sa.String(300), nullable=True),
        sa.Column(
            "updated_at",
            sa.DateTime(timezone=True),
            server_default=sa.func.now(),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["org_id"], ["orgs.id"], name="fk_org_defaults_org_id_orgs", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("org_id", name="pk_org_defaults"),
    )


def downgrade() -> None:
    op.drop_table("org_defaults")
