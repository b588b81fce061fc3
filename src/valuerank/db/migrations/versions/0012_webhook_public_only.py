"""webhooks registered over HTTP deliver to public addresses only, checked again at every
delivery (a host name may resolve elsewhere after it was registered): `public_only`

Revision ID: 0012_webhook_public_only
Revises: 0011_run_scale
Create Date: 2026-11-25 21:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012_webhook_public_only"
down_revision: str | None = "0011_run_scale"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("webhooks", schema=None, recreate="never") as batch_op:
        batch_op.add_column(
            sa.Column("public_only", sa.Boolean(), server_default=sa.false(), nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table("webhooks", schema=None, recreate="never") as batch_op:
        batch_op.drop_column("public_only")
