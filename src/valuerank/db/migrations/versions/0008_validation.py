"""validation: tasks, their RA tags and the models' validations of them

Revision ID: 0008_validation
Revises: 0007_accounts
Create Date: 2026-11-25 05:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008_validation"
down_revision: str | None = "0007_accounts"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# An auto-incrementing id: SQLite's rowid alias must be INTEGER, PostgreSQL gets BIGINT.
_AUTO_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _created_at(name: str = "created_at") -> sa.Column:  # type: ignore[type-arg]
    return sa.Column(name, sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False)


def _org_id(table: str) -> list[sa.schema.SchemaItem]:
    return [
        sa.Column("org_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(
            ["org_id"], ["orgs.id"], name=op.f(f"fk_{table}_org_id_orgs"), ondelete="CASCADE"
        ),
    ]


def upgrade() -> None:
    op.create_table(
        "validation_tasks",
        sa.Column("id", _AUTO_ID, autoincrement=True, nullable=False),
        *_org_id("validation_tasks"),
        sa.Column("name", sa.String(length=300), nullable=False),
        sa.Column("description", sa.Text(), server_default="", nullable=False),
        sa.Column("version", sa.Integer(), server_default="0", nullable=False),
        _created_at(),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_validation_tasks")),
    )
    op.create_index(
        "ix_validation_tasks_org_id_id", "validation_tasks", ["org_id", "id"], unique=False
    )
    op.create_table(
        "ra_tags",
        sa.Column("task_id", _AUTO_ID, nullable=False),
        sa.Column("id", sa.String(length=100), nullable=False),
        *_org_id("ra_tags"),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        _created_at(),
        sa.ForeignKeyConstraint(
            ["task_id"],
            ["validation_tasks.id"],
            name=op.f("fk_ra_tags_task_id_validation_tasks"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("task_id", "id", name=op.f("pk_ra_tags")),
    )
    op.create_table(
        "validations",
        sa.Column("id", _AUTO_ID, autoincrement=True, nullable=False),
        *_org_id("validations"),
        sa.Column("task_id", _AUTO_ID, nullable=False),
        sa.Column("ra_tag_id", sa.String(length=100), nullable=False),
        sa.Column("validator_id", sa.String(length=300), nullable=False),
        sa.Column("model_id", sa.String(length=36), nullable=True),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("confidence", sa.Float(), nullable=False),
        sa.Column("notes", sa.Text(), server_default="", nullable=False),
        sa.Column("is_current", sa.Boolean(), server_default=sa.true(), nullable=False),
        sa.Column("source", sa.String(length=16), server_default="api", nullable=False),
        sa.Column("request_key", sa.String(length=300), nullable=True),
        _created_at("validated_at"),
        sa.CheckConstraint(
            "outcome IN ('validated', 'partial', 'rejected')", name=op.f("ck_validations_outcome")
        ),
        sa.CheckConstraint(
            "confidence >= 0 AND confidence <= 100", name=op.f("ck_validations_confidence")
        ),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["models.id"],
            name=op.f("fk_validations_model_id_models"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["task_id", "ra_tag_id"],
            ["ra_tags.task_id", "ra_tags.id"],
            name=op.f("fk_validations_task_id_ra_tags"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_validations")),
        sa.UniqueConstraint("request_key", name=op.f("uq_validations_request_key")),
    )
    op.create_index(
        "ix_validations_current",
        "validations",
        ["task_id", "ra_tag_id", "validator_id"],
        unique=True,
        postgresql_where=sa.text("is_current"),
        sqlite_where=sa.text("is_current"),
    )


def downgrade() -> None:
    op.drop_index("ix_validations_current", table_name="validations")
    op.drop_table("validations")
    op.drop_table("ra_tags")
    op.drop_index("ix_validation_tasks_org_id_id", table_name="validation_tasks")
    op.drop_table("validation_tasks")
