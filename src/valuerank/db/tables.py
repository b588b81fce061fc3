"""Table definitions (SQLAlchemy Core). Alembic migrations are generated from this metadata.

Every table holding tenant data has `org_id`; services scope every query by it.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    Column,
    DateTime,
    ForeignKey,
    Index,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    func,
)
from sqlalchemy.dialects.postgresql import JSONB

# Stable constraint names, so migrations can alter them on both dialects.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING_CONVENTION)

JSONDocument = JSON().with_variant(JSONB(), "postgresql")
ID_LENGTH = 36  # uuid4 text


def _id() -> Column[str]:
    return Column("id", String(ID_LENGTH), primary_key=True)


def _created_at() -> Column[datetime]:
    return Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now())


def _org_id() -> Column[str]:
    return Column(
        "org_id", String(ID_LENGTH), ForeignKey("orgs.id", ondelete="CASCADE"), nullable=False
    )


orgs = Table(
    "orgs",
    metadata,
    _id(),
    Column("slug", String(64), nullable=False, unique=True),
    Column("name", String(200), nullable=False),
    _created_at(),
)

users = Table(
    "users",
    metadata,
    _id(),
    Column("email", String(320), nullable=False, unique=True),
    Column("name", String(200), nullable=False, server_default=""),
    _created_at(),
)

memberships = Table(
    "memberships",
    metadata,
    _org_id(),
    Column(
        "user_id",
        String(ID_LENGTH),
        ForeignKey("users.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("role", String(16), nullable=False),  # admin | member | viewer
    _created_at(),
    PrimaryKeyConstraint("org_id", "user_id"),
)


def _versioned_document_table(name: str) -> Table:
    """Definitions and rubrics are both versioned like Git: a DAG where a fork has one parent.

    `root_id` names the tree a version belongs to (the root points at itself) so version
    labels can be unique per tree; `content_hash` is the sha256 of the canonical content.
    """
    return Table(
        name,
        metadata,
        _id(),
        _org_id(),
        Column(
            "parent_id",
            String(ID_LENGTH),
            ForeignKey(f"{name}.id", ondelete="RESTRICT"),
            nullable=True,
        ),
        Column("root_id", String(ID_LENGTH), nullable=False),
        Column("name", String(300), nullable=False),
        Column("version_label", String(100), nullable=False),
        Column("content", JSONDocument, nullable=False),
        Column("content_hash", String(64), nullable=False),
        Column("source_file", Text, nullable=True),
        Column("created_by", String(ID_LENGTH), nullable=True),
        _created_at(),
        UniqueConstraint("root_id", "version_label"),
        Index(f"ix_{name}_org_id_name", "org_id", "name"),
        Index(f"ix_{name}_parent_id", "parent_id"),
    )


definitions = _versioned_document_table("definitions")
rubrics = _versioned_document_table("rubrics")

# Runs are filled in by the evaluation pipeline; the foundation needs them to know that a
# definition version has been used (and so is immutable).
runs = Table(
    "runs",
    metadata,
    _id(),
    _org_id(),
    Column(
        "definition_id",
        String(ID_LENGTH),
        ForeignKey("definitions.id", ondelete="RESTRICT"),
        nullable=False,
    ),
    Column("status", String(32), nullable=False, server_default="pending"),
    Column("config", JSONDocument, nullable=False, server_default="{}"),
    _created_at(),
    Index("ix_runs_org_id_definition_id", "org_id", "definition_id"),
)
