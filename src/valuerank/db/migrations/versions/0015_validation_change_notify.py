"""validation task changes NOTIFY valuerank_validation with the task's id (PostgreSQL): API
processes keep each task's head (version, name) in memory while they hear of every change,
so a cached consensus read needs no query

Revision ID: 0015_validation_change_notify
Revises: 0014_auth_change_notify
Create Date: 2026-11-25 23:50:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0015_validation_change_notify"
down_revision: str | None = "0014_auth_change_notify"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Delivered at commit, one per task and transaction (PostgreSQL folds identical notices).
# TRUNCATE has no rows: an empty payload, which means "any task".
FUNCTION = """
CREATE FUNCTION valuerank_notify_validation_task() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        PERFORM pg_notify('valuerank_validation', '');
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('valuerank_validation', OLD.id::text);
    ELSE
        PERFORM pg_notify('valuerank_validation', NEW.id::text);
    END IF;
    RETURN NULL;
END
$$
"""
NOTIFY = "valuerank_notify_validation_task"
HEAD_CHANGED = (
    "OLD.version IS DISTINCT FROM NEW.version"
    " OR OLD.name IS DISTINCT FROM NEW.name"
    " OR OLD.org_id IS DISTINCT FROM NEW.org_id"
    " OR OLD.id IS DISTINCT FROM NEW.id"
)
TRIGGERS = {
    "validation_tasks_head_update": (
        f"AFTER UPDATE ON validation_tasks FOR EACH ROW WHEN ({HEAD_CHANGED})"
    ),
    "validation_tasks_head_delete": "AFTER DELETE ON validation_tasks FOR EACH ROW",
    "validation_tasks_head_truncate": "AFTER TRUNCATE ON validation_tasks FOR EACH STATEMENT",
}


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return  # SQLite: no NOTIFY, and the API reads every task's head there
    op.execute(FUNCTION)
    for name, when in TRIGGERS.items():
        op.execute(f"CREATE TRIGGER {name} {when} EXECUTE FUNCTION {NOTIFY}()")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for name in TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS {name} ON validation_tasks")
    op.execute(f"DROP FUNCTION IF EXISTS {NOTIFY}()")
