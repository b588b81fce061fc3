"""accounts: password hashes, API tokens and browser sessions

Revision ID: 0007_accounts
Revises: 0006_webhook_secret_encrypted
Create Date: 2026-11-25 01:00:00.000000

`users` gains `password_hash` (argon2id; NULL for token-only users) and `last_login_at`,
added in place (no copy of the table: on SQLite a copy would DROP `users`, and with foreign
keys on that cascades into `memberships`). `api_tokens` holds SHA-256 hashes of API tokens,
`sessions` the hashes of browser-session secrets with their CSRF tokens.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007_accounts"
down_revision: str | None = "0006_webhook_secret_encrypted"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID = sa.String(36)
TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("users", schema=None, recreate="never") as batch_op:
        batch_op.add_column(sa.Column("password_hash", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("last_login_at", TS, nullable=True))

    op.create_table(
        "api_tokens",
        sa.Column("id", ID, nullable=False),
        sa.Column("org_id", ID, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("name", sa.String(100), server_default="", nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("display_prefix", sa.String(16), nullable=False),
        sa.Column("created_at", TS, server_default=sa.func.now(), nullable=False),
        sa.Column("last_used_at", TS, nullable=True),
        sa.Column("expires_at", TS, nullable=True),
        sa.Column("revoked_at", TS, nullable=True),
        sa.ForeignKeyConstraint(
            ["org_id"], ["orgs.id"], name="fk_api_tokens_org_id_orgs", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name="fk_api_tokens_user_id_users", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_api_tokens"),
        sa.UniqueConstraint("token_hash", name="uq_api_tokens_token_hash"),
    )
    op.create_index("ix_api_tokens_org_id_user_id", "api_tokens", ["org_id", "user_id"])

    op.create_table(
        "sessions",
        sa.Column("id", ID, nullable=False),
        sa.Column("org_id", ID, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("token_id", ID, nullable=True),
        sa.Column("secret_hash", sa.String(64), nullable=False),
        sa.Column("csrf_token", sa.String(64), nullable=False),
        sa.Column("created_at", TS, server_default=sa.func.now(), nullable=False),
        sa.Column("expires_at", TS, nullable=False),
        sa.Column("revoked_at", TS, nullable=True),
        sa.ForeignKeyConstraint(
            ["org_id"], ["orgs.id"], name="fk_sessions_org_id_orgs", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name="fk_sessions_user_id_users", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["token_id"],
            ["api_tokens.id"],
            name="fk_sessions_token_id_api_tokens",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_sessions"),
        sa.UniqueConstraint("secret_hash", name="uq_sessions_secret_hash"),
    )
    op.create_index("ix_sessions_user_id", "sessions", ["user_id"])
    op.create_index("ix_sessions_token_id", "sessions", ["token_id"])


def downgrade() -> None:
    op.drop_index("ix_sessions_token_id", table_name="sessions")
    op.drop_index("ix_sessions_user_id", table_name="sessions")
    op.drop_table("sessions")
    op.drop_index("ix_api_tokens_org_id_user_id", table_name="api_tokens")
    op.drop_table("api_tokens")
    with op.batch_alter_table("users", schema=None, recreate="never") as batch_op:
        batch_op.drop_column("last_login_at")
        batch_op.drop_column("password_hash")
