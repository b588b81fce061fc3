"""invitations: an existing account joins another organisation only once its user accepts

Revision ID: 0018_invitations
Revises: 0017_slot_defaults
Create Date: 2026-11-29 12:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018_invitations"
down_revision: str | None = "0017_slot_defaults"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID = sa.String(36)


def upgrade() -> None:
    op.create_table(
        "invitations",
        sa.Column("id", ID, nullable=False),
        sa.Column("org_id", ID, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["org_id"], ["orgs.id"], name="fk_invitations_org_id_orgs", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name="fk_invitations_user_id_users", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_invitations"),
        sa.UniqueConstraint("org_id", "user_id", name="uq_invitations_org_id_user_id"),
    )
    op.create_index("ix_invitations_user_id", "invitations", ["user_id"])


def downgrade() -> None:
    op.drop_index("ix_invitations_user_id", table_name="invitations")
    op.drop_table("invitations")
