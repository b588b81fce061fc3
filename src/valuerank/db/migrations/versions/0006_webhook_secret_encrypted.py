"""webhooks: the signing secret is stored encrypted, in `secret_encrypted`

Revision ID: 0006_webhook_secret_encrypted
Revises: 0005_queue_counters
Create Date: 2026-11-22 03:00:00.000000

`webhooks.secret` (plaintext) is renamed `webhooks.secret_encrypted` (the Fernet token of the
secret under VALUERANK_SECRET_KEY, see valuerank.crypto), and its values are converted in the
same transaction: under the new name there is never a plaintext secret, and code that still
reads `secret` fails loudly instead of taking a token for a secret or the other way round.
The column is renamed in place (no copy of the table: see `_rename`), so the outbox rows of
the webhooks are kept.

Existing plaintext secrets:

* VALUERANK_SECRET_KEY set (environment or .env) where the upgrade runs: each is encrypted
  with it, and the webhooks go on signing with the same secret. Workers need the same key.
* VALUERANK_SECRET_KEY not set: the secrets cannot be encrypted, and are not kept in
  plaintext either. Those webhooks are deactivated (their pending notifications wait, no new
  ones are written) and their secret is erased; one warning per webhook says so. Register them
  again with a secret (`valuerank webhooks remove ID`, then `valuerank webhooks add URL
  --secret-prompt`), or run the upgrade again from a backup with the key set.
* VALUERANK_SECRET_KEY set but invalid (SECRET_KEY_INVALID): the upgrade stops, nothing changes.

The downgrade is symmetric: with the key, tokens are decrypted back to plaintext; without it
(or with a key that cannot open them) those webhooks are deactivated and their secret erased.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from valuerank.config import Settings
from valuerank.crypto import SecretCipher, SecretUnreadable, optional_cipher

revision: str = "0006_webhook_secret_encrypted"
down_revision: str | None = "0005_queue_counters"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

log = logging.getLogger("valuerank.migrations")


def _cipher() -> SecretCipher | None:
    # Read afresh (not the process's cached settings): the key in force for this upgrade.
    return optional_cipher(Settings().secret_key)


def _convert(column: str, convert: str) -> None:
    """Replace every non-null secret of `column` by its conversion with the key (`encrypt` or
    `decrypt`); without a usable key, erase it and deactivate the webhook, with a warning."""
    conn = op.get_bind()
    rows = conn.execute(
        sa.text(f"SELECT id, {column} FROM webhooks WHERE {column} IS NOT NULL ORDER BY id")
    ).all()
    if not rows:
        return
    cipher = _cipher()
    for webhook_id, value in rows:
        converted: str | None = None
        reason = "VALUERANK_SECRET_KEY is not set"
        if cipher is not None:
            try:
                converted = (
                    cipher.encrypt(value)
                    if convert == "encrypt"
                    else cipher.decrypt(value, what=f"the signing secret of webhook {webhook_id}")
                )
            except SecretUnreadable:
                reason = "VALUERANK_SECRET_KEY cannot decrypt it"
        values = {"id": webhook_id, "value": converted}
        if converted is not None:
            conn.execute(sa.text(f"UPDATE webhooks SET {column} = :value WHERE id = :id"), values)
            continue
        conn.execute(
            sa.text(f"UPDATE webhooks SET {column} = :value, active = :off WHERE id = :id"),
            {**values, "off": False},
        )
        log.warning(
            "webhook %s: its signing secret was erased and the webhook deactivated (%s, so "
            "the secret could not be carried over); register it again with a secret "
            "(`valuerank webhooks remove %s`, then `valuerank webhooks add URL "
            "--secret-prompt`)",
            webhook_id,
            reason,
            webhook_id,
        )


def _rename(old: str, new: str) -> None:
    # recreate="never": on SQLite a copy-and-move of `webhooks` would DROP the table, and with
    # foreign keys on that cascades into `outbox` (every notification of every webhook would
    # be deleted). A column rename is native on both dialects (SQLite >= 3.25).
    with op.batch_alter_table("webhooks", schema=None, recreate="never") as batch_op:
        batch_op.alter_column(
            old, new_column_name=new, existing_type=sa.Text(), existing_nullable=True
        )


def upgrade() -> None:
    _rename("secret", "secret_encrypted")
    _convert("secret_encrypted", "encrypt")


def downgrade() -> None:
    _convert("secret_encrypted", "decrypt")
    _rename("secret_encrypted", "secret")
