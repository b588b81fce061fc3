"""transcript search and triage: `transcripts.search_text` holds each transcript's text folded
for search (Unicode case folding and normalisation, runs/searchable.py), so "café" finds
"CAFÉ" on both databases; it is filled here for the transcripts stored before. Indexes on
(org_id, created_at, id) and (org_id, run_id, created_at, id) (which replaces (org_id,
run_id)) serve the transcript list's newest- and oldest-first pages, a transcript's
neighbours in them and their counts without sorting or walking other runs' transcripts

Revision ID: 0021_transcript_search
Revises: 0020_analysis_inputs_version
Create Date: 2026-12-01 10:00:00.000000
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021_transcript_search"
down_revision: str | None = "0020_analysis_inputs_version"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BATCH = 500  # transcripts read and written at a time: memory stays one batch


def _searchable(text: str) -> str:
    # runs/searchable.py as of this revision (a migration must not change when it does).
    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", text).casefold())


def upgrade() -> None:
    op.add_column(
        "transcripts", sa.Column("search_text", sa.Text(), server_default="", nullable=False)
    )
    op.create_index(
        "ix_transcripts_org_id_created_at_id",
        "transcripts",
        ["org_id", "created_at", "id"],
        unique=False,
    )
    # (org_id, run_id) grows by the list's order: it serves whatever the old one did.
    op.create_index(
        "ix_transcripts_org_id_run_id_created_at_id",
        "transcripts",
        ["org_id", "run_id", "created_at", "id"],
        unique=False,
    )
    op.drop_index("ix_transcripts_org_id_run_id", table_name="transcripts")
    conn = op.get_bind()
    table = sa.table(
        "transcripts",
        sa.column("id", sa.String),
        sa.column("content", sa.Text),
        sa.column("search_text", sa.Text),
    )
    after = ""
    while True:
        rows = conn.execute(
            sa.select(table.c.id, table.c.content)
            .where(table.c.id > after)
            .order_by(table.c.id)
            .limit(BATCH)
        ).all()
        if not rows:
            return
        conn.execute(
            sa.update(table)
            .where(table.c.id == sa.bindparam("tid"))
            .values(search_text=sa.bindparam("folded")),
            [{"tid": r.id, "folded": _searchable(r.content)} for r in rows],
        )
        after = rows[-1].id


def downgrade() -> None:
    op.create_index(
        "ix_transcripts_org_id_run_id", "transcripts", ["org_id", "run_id"], unique=False
    )
    op.drop_index("ix_transcripts_org_id_run_id_created_at_id", table_name="transcripts")
    op.drop_index("ix_transcripts_org_id_created_at_id", table_name="transcripts")
    with op.batch_alter_table("transcripts") as batch:
        batch.drop_column("search_text")
