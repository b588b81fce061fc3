"""auth changes NOTIFY valuerank_auth (PostgreSQL): API processes keep recently used tokens'
identities in memory and empty that cache when a token is revoked, changes expiry or owner,
or a membership changes or goes, whichever process or SQL statement made the change

Revision ID: 0014_auth_change_notify
Revises: 0013_response_cache_created_at
Create Date: 2026-11-25 23:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0014_auth_change_notify"
down_revision: str | None = "0013_response_cache_created_at"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Delivered at commit; PostgreSQL folds identical notices of one transaction into one.
FUNCTION = """
CREATE FUNCTION valuerank_notify_auth() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('valuerank_auth', TG_TABLE_NAME);
    RETURN NULL;
END
$$
"""
# A token's use (last_used_at, once a minute) is no change to who it is: no notice.
TOKEN_CHANGED = (
    "OLD.revoked_at IS DISTINCT FROM NEW.revoked_at"
    " OR OLD.expires_at IS DISTINCT FROM NEW.expires_at"
    " OR OLD.token_hash IS DISTINCT FROM NEW.token_hash"
    " OR OLD.org_id IS DISTINCT FROM NEW.org_id"
    " OR OLD.user_id IS DISTINCT FROM NEW.user_id"
)
TRIGGERS = {
    "api_tokens_auth_update": (
        f"AFTER UPDATE ON api_tokens FOR EACH ROW WHEN ({TOKEN_CHANGED})",
        "api_tokens",
    ),
    "api_tokens_auth_delete": ("AFTER DELETE OR TRUNCATE ON api_tokens", "api_tokens"),
    "memberships_auth_change": (
        "AFTER UPDATE OR DELETE OR TRUNCATE ON memberships",
        "memberships",
    ),
}


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return  # SQLite: no NOTIFY, and the API keeps no token cache there
    op.execute(FUNCTION)
    for name, (when, _table) in TRIGGERS.items():
        # Statement-level where no row data is needed: one notice per statement.
        each = "" if "FOR EACH ROW" in when else " FOR EACH STATEMENT"
        op.execute(f"CREATE TRIGGER {name} {when}{each} EXECUTE FUNCTION valuerank_notify_auth()")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for name, (_when, table) in TRIGGERS.items():
        op.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")
    op.execute("DROP FUNCTION IF EXISTS valuerank_notify_auth()")
