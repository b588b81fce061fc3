"""Delivering what is due: claim, send each (concurrently, no transaction open), then settle
each row in its own short transaction `WHERE lease_token = :mine` (a row whose lease ran out
and was settled by someone else is `lost`, not overwritten).

A 2xx marks the row `delivered`; anything else reschedules it with exponential backoff and
full jitter, honouring a receiver's `Retry-After` up to the cap, until `max_attempts` is spent
and the row goes `dead`, keeping `last_error` and `last_status_code`.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from typing import Any

from sqlalchemy import update

from valuerank.crypto import SecretCipher
from valuerank.db.engine import Database
from valuerank.db.tables import outbox
from valuerank.queue.dialect import db_now, db_now_plus
from valuerank.queue.errors import backoff_seconds
from valuerank.queue.outbox.claiming import Delivery, claim_deliveries
from valuerank.queue.outbox.sending import Response, send
from valuerank.queue.outbox.statuses import DEAD, DELIVERED, PENDING

MAX_ERROR_CHARS = 1000


@dataclass
class DeliveryReport:
    claimed: int = 0
    delivered: int = 0
    retried: int = 0
    dead: int = 0
    lost: int = 0  # the lease ran out and someone else settled the row


async def _settle(
    db: Database,
    delivery: Delivery,
    response: Response,
    *,
    backoff_base: float,
    backoff_cap: float,
    rng: random.Random | None,
) -> str | None:
    """Record the outcome under the lease; returns the row's new status (None: lease lost)."""
    mine = (outbox.c.id == delivery.id, outbox.c.lease_token == delivery.lease_token)
    off_lease = {"lease_token": None, "lease_expires_at": None}
    async with db.transaction(immediate=True) as conn:
        dialect = conn.dialect.name
        if response.error is None:
            values: dict[str, Any] = {
                "status": DELIVERED,
                "delivered_at": db_now(dialect),
                "last_status_code": response.status_code,
            }
        else:
            values = {
                "last_error": response.error[:MAX_ERROR_CHARS],
                "last_status_code": response.status_code,
            }
            if delivery.attempts >= delivery.max_attempts:
                values["status"] = DEAD
            else:
                delay = backoff_seconds(
                    delivery.attempts, base=backoff_base, cap=backoff_cap, rng=rng
                )
                if response.retry_after is not None:
                    delay = max(delay, min(response.retry_after, backoff_cap))
                values["next_attempt_at"] = db_now_plus(dialect, delay)
        result = await conn.execute(
            update(outbox)
            .where(*mine, outbox.c.status == PENDING)
            .values(**values, **off_lease)
            .returning(outbox.c.status)
        )
        return result.scalar_one_or_none()


async def deliver_due(
    db: Database,
    *,
    limit: int = 50,
    timeout: float = 10.0,
    backoff_base: float = 10.0,
    backoff_cap: float = 3600.0,
    rng: random.Random | None = None,
    cipher: SecretCipher | None = None,
    org_id: str | None = None,
) -> DeliveryReport:
    """Claim up to `limit` due notifications, POST them concurrently (no transaction open),
    and settle each. Safe to run from every worker at once. `cipher` (from
    `VALUERANK_SECRET_KEY`) decrypts the webhooks' signing secrets; without it, deliveries of
    webhooks that have one fail (unsent) and are retried later."""
    report = DeliveryReport()
    deliveries = await claim_deliveries(
        db, limit=limit, lease_seconds=2 * timeout + 30.0, org_id=org_id
    )
    report.claimed = len(deliveries)

    async def one(delivery: Delivery) -> None:
        response = await send(delivery, timeout=timeout, cipher=cipher)
        status = await _settle(
            db,
            delivery,
            response,
            backoff_base=backoff_base,
            backoff_cap=backoff_cap,
            rng=rng,
        )
        if status is None:
            report.lost += 1
        elif status == DELIVERED:
            report.delivered += 1
        elif status == DEAD:
            report.dead += 1
        else:
            report.retried += 1

    await asyncio.gather(*(one(d) for d in deliveries))
    return report
