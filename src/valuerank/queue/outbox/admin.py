"""The outbox as its organisation's operators see it: listing, dead letters per topic and
webhook, and sending a dead notification back."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import outbox
from valuerank.errors import InvalidInputError, NotFoundError
from valuerank.queue.dialect import as_utc, db_now, iso
from valuerank.queue.outbox.registry import get_webhook
from valuerank.queue.outbox.statuses import DEAD, OUTBOX_STATUSES, PENDING


class NotificationNotFoundError(NotFoundError):
    code = "NOTIFICATION_NOT_FOUND"


@dataclass(frozen=True)
class OutboxEntry:
    id: str
    org_id: str
    webhook_id: str | None
    topic: str
    payload: dict[str, Any]
    status: str
    attempts: int
    max_attempts: int
    next_attempt_at: datetime
    last_error: str | None
    last_status_code: int | None
    created_at: datetime
    delivered_at: datetime | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "webhook_id": self.webhook_id,
            "topic": self.topic,
            "payload": self.payload,
            "status": self.status,
            "attempts": self.attempts,
            "max_attempts": self.max_attempts,
            "next_attempt_at": self.next_attempt_at.isoformat(),
            "last_error": self.last_error,
            "last_status_code": self.last_status_code,
            "created_at": self.created_at.isoformat(),
            "delivered_at": iso(self.delivered_at),
        }


def _entry(row: Any) -> OutboxEntry:
    return OutboxEntry(
        id=row.id,
        org_id=row.org_id,
        webhook_id=row.webhook_id,
        topic=row.topic,
        payload=row.payload,
        status=row.status,
        attempts=row.attempts,
        max_attempts=row.max_attempts,
        next_attempt_at=as_utc(row.next_attempt_at),
        last_error=row.last_error,
        last_status_code=row.last_status_code,
        created_at=as_utc(row.created_at),
        delivered_at=None if row.delivered_at is None else as_utc(row.delivered_at),
    )


async def list_outbox(
    conn: AsyncConnection,
    org_id: str,
    *,
    status: str | Sequence[str] | None = None,
    topic: str | None = None,
    webhook_id: str | None = None,
    before_id: str | None = None,
    limit: int = 100,
) -> list[OutboxEntry]:
    """The organisation's notifications, newest first (ids are time-ordered), optionally
    filtered (`status`: one status or several; empty or None: all), before `before_id` (the
    keyset of the next page). Another organisation's `webhook_id` is NOT_FOUND, like an
    unknown one."""
    statuses = [status] if isinstance(status, str) else list(status or ())
    for one in statuses:
        if one not in OUTBOX_STATUSES:
            raise InvalidInputError(
                f"invalid outbox status {one!r}", hint=f"use one of {', '.join(OUTBOX_STATUSES)}"
            )
    query = select(outbox).where(outbox.c.org_id == org_id)
    if statuses:
        query = query.where(outbox.c.status.in_(statuses))
    if topic is not None:
        query = query.where(outbox.c.topic == topic)
    if webhook_id is not None:
        await get_webhook(conn, org_id, webhook_id)
        query = query.where(outbox.c.webhook_id == webhook_id)
    if before_id is not None:
        query = query.where(outbox.c.id < before_id)
    rows = await conn.execute(query.order_by(outbox.c.id.desc()).limit(limit))
    return [_entry(r) for r in rows]


@dataclass(frozen=True)
class DeadLetterGroup:
    topic: str
    webhook_id: str | None
    count: int
    oldest: datetime  # created_at of the oldest dead notification of the group
    last_error: str | None  # of the newest dead row of the group

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "webhook_id": self.webhook_id,
            "count": self.count,
            "oldest": self.oldest.isoformat(),
            "last_error": self.last_error,
        }


async def dead_letter_summary(conn: AsyncConnection, org_id: str) -> list[DeadLetterGroup]:
    """Dead notifications per (topic, webhook): how many, since when, the latest error."""
    rows = list(
        await conn.execute(
            select(
                outbox.c.topic,
                outbox.c.webhook_id,
                func.count(),
                func.min(outbox.c.created_at),
                func.max(outbox.c.id),
            )
            .where(outbox.c.org_id == org_id, outbox.c.status == DEAD)
            .group_by(outbox.c.topic, outbox.c.webhook_id)
            .order_by(outbox.c.topic, outbox.c.webhook_id)
        )
    )
    newest = [r[4] for r in rows]
    errors: dict[str, str | None] = {}
    if newest:
        found = await conn.execute(
            select(outbox.c.id, outbox.c.last_error).where(outbox.c.id.in_(newest))
        )
        errors = {outbox_id: error for outbox_id, error in found}
    return [
        DeadLetterGroup(
            topic=topic,
            webhook_id=webhook_id,
            count=int(n),
            oldest=as_utc(oldest),
            last_error=errors.get(last_id),
        )
        for topic, webhook_id, n, oldest, last_id in rows
    ]


async def retry_delivery(conn: AsyncConnection, org_id: str, outbox_id: str) -> OutboxEntry:
    """A dead notification back to `pending`, due now, with its attempts reset."""
    row = (
        await conn.execute(
            update(outbox)
            .where(outbox.c.org_id == org_id, outbox.c.id == outbox_id, outbox.c.status == DEAD)
            .values(
                status=PENDING,
                attempts=0,
                next_attempt_at=db_now(conn.dialect.name),
                lease_token=None,
                lease_expires_at=None,
            )
            .returning(*outbox.c)
        )
    ).first()
    if row is None:
        exists = await conn.scalar(
            select(outbox.c.status).where(outbox.c.org_id == org_id, outbox.c.id == outbox_id)
        )
        if exists is None:
            raise NotificationNotFoundError(
                f"no notification {outbox_id!r} in this organisation",
                hint="`valuerank webhooks deliveries --status dead` shows the dead ones",
            )
        raise InvalidInputError(
            f"notification {outbox_id!r} is {exists}, not dead", hint="only dead ones are retried"
        )
    return _entry(row)
