"""response_cache pruned by age: an index on created_at, so maintenance finds the oldest
cached answers without reading the table

Revision ID: 0013_response_cache_created_at
Revises: 0012_webhook_public_only
Create Date: 2026-11-25 22:05:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0013_response_cache_created_at"
down_revision: str | None = "0012_webhook_public_only"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_response_cache_created_at", "response_cache", ["created_at"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_response_cache_created_at", table_name="response_cache")
