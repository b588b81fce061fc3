"""The webhooks an organisation subscribes: register, read, pause/resume, remove.

A webhook's signing secret is write-only and encrypted at rest: `register_webhook` stores only
its Fernet token (`webhooks.secret_encrypted`, keyed by `VALUERANK_SECRET_KEY` through the
`SecretCipher` its caller passes; a secret with no cipher is refused with SECRET_KEY_MISSING).
No function here returns the secret (`Webhook.has_secret` says whether one is set).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.crypto import SecretCipher, cipher_from_secret
from valuerank.db.tables import outbox, webhooks
from valuerank.errors import InvalidInputError, NotFoundError
from valuerank.queue.dialect import as_utc, db_now
from valuerank.queue.ids import new_id
from valuerank.queue.webhook_signing import check_secret


@dataclass(frozen=True)
class Webhook:
    """A webhook as shown to anyone: the secret is write-only and never part of it."""

    id: str
    org_id: str
    url: str
    event_types: list[str]
    active: bool
    has_secret: bool
    created_at: datetime

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "url": self.url,
            "event_types": list(self.event_types),
            "active": self.active,
            "has_secret": self.has_secret,
            "created_at": self.created_at.isoformat(),
        }


def _webhook(row: Any) -> Webhook:
    return Webhook(
        id=row.id,
        org_id=row.org_id,
        url=row.url,
        event_types=list(row.event_types or []),
        active=bool(row.active),
        has_secret=row.secret_encrypted is not None,
        created_at=as_utc(row.created_at),
    )


def _check_url(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInputError(f"invalid webhook url {url!r}", hint="use an http(s):// URL")


async def register_webhook(
    conn: AsyncConnection,
    org_id: str,
    url: str,
    *,
    event_types: Sequence[str] = (),
    secret: str | None = None,
    cipher: SecretCipher | None = None,
    public_only: bool = False,
) -> Webhook:
    """Subscribe `url` to the organisation's notifications of `event_types` (empty: all).
    `public_only`: every delivery checks again that the host resolves to public addresses
    only, and connects to the one it checked (see `webhook_targets`).

    `secret` is write-only: it signs deliveries, is stored only encrypted with `cipher` and is
    never returned (see `Webhook`). A secret without a cipher (no `VALUERANK_SECRET_KEY`) is
    refused with SECRET_KEY_MISSING and nothing is written; a webhook without one needs no key.
    """
    _check_url(url)
    types = list(dict.fromkeys(event_types))
    if any(not isinstance(t, str) or not t for t in types):
        raise InvalidInputError("event types must be non-empty strings")
    token: str | None = None
    if secret is not None:
        if not secret:
            raise InvalidInputError("an empty secret signs nothing", hint="omit it or give one")
        check_secret(secret)
        if cipher is None:
            cipher = cipher_from_secret(
                None,
                purpose="storing a webhook signing secret",
                note="webhooks without a secret work without it",
            )
        token = cipher.encrypt(secret)
    webhook_id = new_id()
    await conn.execute(
        insert(webhooks).values(
            id=webhook_id,
            org_id=org_id,
            url=url,
            secret_encrypted=token,
            event_types=types,
            active=True,
            created_at=db_now(conn.dialect.name),
            public_only=public_only,
        )
    )
    row = (await conn.execute(select(webhooks).where(webhooks.c.id == webhook_id))).one()
    return _webhook(row)


def _no_webhook(webhook_id: str) -> NotFoundError:
    return NotFoundError(
        f"no webhook {webhook_id!r} in this organisation",
        hint="`valuerank webhooks list` shows its webhooks",
    )


async def get_webhook(conn: AsyncConnection, org_id: str, webhook_id: str) -> Webhook:
    """One of the organisation's webhooks (NOT_FOUND for any other id)."""
    row = (
        await conn.execute(
            select(webhooks).where(webhooks.c.org_id == org_id, webhooks.c.id == webhook_id)
        )
    ).first()
    if row is None:
        raise _no_webhook(webhook_id)
    return _webhook(row)


async def list_webhooks(conn: AsyncConnection, org_id: str) -> list[Webhook]:
    rows = await conn.execute(
        select(webhooks).where(webhooks.c.org_id == org_id).order_by(webhooks.c.id)
    )
    return [_webhook(r) for r in rows]


async def set_webhook_active(
    conn: AsyncConnection, org_id: str, webhook_id: str, active: bool
) -> None:
    """Pause (False) or resume a webhook: its pending rows wait while it is inactive, and
    no new rows are written for it."""
    result = await conn.execute(
        update(webhooks)
        .where(webhooks.c.org_id == org_id, webhooks.c.id == webhook_id)
        .values(active=active)
    )
    if result.rowcount == 0:
        raise _no_webhook(webhook_id)


async def remove_webhook(conn: AsyncConnection, org_id: str, webhook_id: str) -> None:
    """Delete a webhook and (by cascade) its outbox rows, delivered or not."""
    await conn.execute(
        delete(outbox).where(outbox.c.org_id == org_id, outbox.c.webhook_id == webhook_id)
    )
    result = await conn.execute(
        delete(webhooks).where(webhooks.c.org_id == org_id, webhooks.c.id == webhook_id)
    )
    if result.rowcount == 0:
        raise _no_webhook(webhook_id)
