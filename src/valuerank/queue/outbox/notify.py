"""Writing notifications: one outbox row per subscribed webhook, in the caller's transaction
(every event does it, see `events.py`), so a notification exists if and only if the change it
reports committed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import outbox, webhooks
from valuerank.queue.dialect import db_now
from valuerank.queue.ids import new_id
from valuerank.queue.outbox.statuses import DEFAULT_MAX_ATTEMPTS, PENDING


async def enqueue_notifications(
    conn: AsyncConnection,
    org_id: str,
    topic: str,
    payload: Mapping[str, Any],
    *,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    aliases: Sequence[str] = (),
) -> list[str]:
    """One outbox row per active webhook of the organisation subscribed to `topic` (or to one
    of its older names, `aliases`), in the caller's transaction; returns their ids. One
    SELECT when nobody is subscribed."""
    subscribed = [
        row.id
        for row in await conn.execute(
            select(webhooks.c.id, webhooks.c.event_types).where(
                webhooks.c.org_id == org_id, webhooks.c.active.is_(True)
            )
        )
        if not row.event_types or any(t in row.event_types for t in (topic, *aliases))
    ]
    if not subscribed:
        return []
    now = db_now(conn.dialect.name)
    ids = [new_id() for _ in subscribed]
    body = dict(payload)
    await conn.execute(
        insert(outbox).values(created_at=now, next_attempt_at=now),
        [
            {
                "id": outbox_id,
                "org_id": org_id,
                "webhook_id": webhook_id,
                "topic": topic,
                "payload": body,
                "status": PENDING,
                "attempts": 0,
                "max_attempts": max_attempts,
            }
            for outbox_id, webhook_id in zip(ids, subscribed, strict=True)
        ],
    )
    return ids
