"""runs at scale: a run's report costs the same at any size. `run_tallies` counts each run's
transcripts per model and decision code (status and results read it instead of the
transcripts), and jobs get an index (partition, kind, status), so a run's jobs of one kind
are found without reading the others

Revision ID: 0011_run_scale
Revises: 0010_maintenance
Create Date: 2026-11-25 16:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011_run_scale"
down_revision: str | None = "0010_maintenance"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_jobs_partition_kind_status", "jobs", ["partition", "kind", "status"], unique=False
    )
    op.create_table(
        "run_tallies",
        sa.Column("org_id", sa.String(length=36), nullable=False),
        sa.Column("run_id", sa.String(length=36), nullable=False),
        sa.Column("model", sa.String(length=300), nullable=False),
        sa.Column("decision_code", sa.Integer(), nullable=False),
        sa.Column("transcripts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("refusals", sa.Integer(), server_default="0", nullable=False),
        sa.Column("synthetic", sa.Integer(), server_default="0", nullable=False),
        sa.Column("cost_usd", sa.Float(), server_default="0", nullable=False),
        sa.Column("costs_known", sa.Integer(), server_default="0", nullable=False),
        sa.Column("judge_cost_usd", sa.Float(), server_default="0", nullable=False),
        sa.ForeignKeyConstraint(
            ["org_id"], ["orgs.id"], name=op.f("fk_run_tallies_org_id_orgs"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_run_tallies_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", "model", "decision_code", name=op.f("pk_run_tallies")),
    )
    # The tallies of the transcripts and judgments already stored (code 0: no decision).
    op.execute(
        "INSERT INTO run_tallies (org_id, run_id, model, decision_code, transcripts, refusals, "
        "synthetic, cost_usd, costs_known, judge_cost_usd) "
        "SELECT t.org_id, t.run_id, t.model, COALESCE(t.decision_code, 0), COUNT(*), "
        "SUM(CASE WHEN t.decision_reason = 'refusal' THEN 1 ELSE 0 END), "
        "SUM(CASE WHEN t.synthetic THEN 1 ELSE 0 END), "
        "COALESCE(SUM(t.cost_usd), 0), COUNT(t.cost_usd), COALESCE(SUM(j.cost), 0) "
        "FROM transcripts t LEFT JOIN (SELECT transcript_id, SUM(cost_usd) AS cost "
        "FROM judgments GROUP BY transcript_id) j ON j.transcript_id = t.id "
        "GROUP BY t.org_id, t.run_id, t.model, COALESCE(t.decision_code, 0)"
    )


def downgrade() -> None:
    op.drop_table("run_tallies")
    op.drop_index("ix_jobs_partition_kind_status", table_name="jobs")
