"""Claiming due notifications: in one short transaction, a lease with a fencing token (like
jobs), the attempt counted, and `next_attempt_at` pushed to the lease's expiry, so the rows of
a sender that died mid-delivery come due again by themselves."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import String, cast, func, select, update

from valuerank.db.engine import Database
from valuerank.db.tables import outbox, webhooks
from valuerank.queue.dialect import db_now, db_now_plus
from valuerank.queue.outbox.statuses import PENDING


@dataclass(frozen=True)
class Delivery:
    """One claimed row, with what is needed to send it: the webhook's secret as its Fernet
    token, decrypted only when the request is signed (and kept out of the repr all the same)."""

    id: str
    org_id: str
    webhook_id: str
    topic: str
    body: bytes
    attempts: int
    max_attempts: int
    lease_token: str
    url: str
    secret_encrypted: str | None = field(default=None, repr=False)
    public_only: bool = False


def encode_body(outbox_id: str, topic: str, payload: Mapping[str, Any]) -> bytes:
    return json.dumps(
        {"id": outbox_id, "topic": topic, "payload": payload},
        separators=(",", ":"),
        sort_keys=True,
        default=str,
    ).encode()


def _lease_token(dialect: str) -> Any:
    if dialect == "postgresql":
        return cast(func.gen_random_uuid(), String)
    return func.lower(func.hex(func.randomblob(16)))


async def claim_deliveries(
    db: Database, *, limit: int, lease_seconds: float, org_id: str | None = None
) -> list[Delivery]:
    """Claim up to `limit` due rows of active webhooks (of `org_id` only, when given): counts
    an attempt, sets a lease token and pushes `next_attempt_at` to the lease expiry (a crashed
    sender's rows come back)."""
    scope = [] if org_id is None else [outbox.c.org_id == org_id]
    async with db.transaction() as conn:  # a plain read first: no write lock when idle
        due = await conn.scalar(
            select(outbox.c.id)
            .where(
                outbox.c.status == PENDING,
                outbox.c.next_attempt_at <= db_now(db.dialect),
                *scope,
            )
            .limit(1)
        )
    if due is None:
        return []
    async with db.transaction(immediate=True) as conn:
        dialect = conn.dialect.name
        now = db_now(dialect)
        candidates = (
            select(outbox.c.id)
            .join(webhooks, webhooks.c.id == outbox.c.webhook_id)
            .where(
                outbox.c.status == PENDING,
                outbox.c.next_attempt_at <= now,
                webhooks.c.active.is_(True),
                *scope,
            )
            .order_by(outbox.c.next_attempt_at, outbox.c.id)
            .limit(limit)
        )
        until = db_now_plus(dialect, lease_seconds)
        values = {
            "attempts": outbox.c.attempts + 1,
            "lease_token": _lease_token(dialect),
            "lease_expires_at": until,
            "next_attempt_at": until,
        }
        if dialect == "postgresql":
            c = (
                candidates.with_for_update(skip_locked=True, of=outbox)
                .cte("c")
                .prefix_with("MATERIALIZED")
            )
            stmt = update(outbox).where(outbox.c.id == c.c.id, outbox.c.status == PENDING)
        else:
            stmt = update(outbox).where(
                outbox.c.id.in_(candidates.scalar_subquery()), outbox.c.status == PENDING
            )
        rows = list((await conn.execute(stmt.values(values).returning(*outbox.c))).all())
        if not rows:
            return []
        hooks = {
            h.id: h
            for h in await conn.execute(
                select(
                    webhooks.c.id,
                    webhooks.c.url,
                    webhooks.c.secret_encrypted,
                    webhooks.c.public_only,
                ).where(webhooks.c.id.in_({r.webhook_id for r in rows}))
            )
        }
    return [
        Delivery(
            id=r.id,
            org_id=r.org_id,
            webhook_id=r.webhook_id,
            topic=r.topic,
            body=encode_body(r.id, r.topic, r.payload),
            attempts=r.attempts,
            max_attempts=r.max_attempts,
            lease_token=r.lease_token,
            url=hooks[r.webhook_id].url,
            secret_encrypted=hooks[r.webhook_id].secret_encrypted,
            public_only=bool(hooks[r.webhook_id].public_only),
        )
        for r in sorted(rows, key=lambda r: r.id)
    ]
