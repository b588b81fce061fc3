"""The outbox: webhook notifications written with the change they report, delivered later.

`enqueue_notifications` runs in the caller's transaction (every event does it, see
`events.py`): the notification exists if and only if the change committed. Delivery is
at-least-once and happens outside any transaction: `deliver_due` claims due rows in one short
transaction (a lease with a fencing token, like jobs; the claim counts the attempt), POSTs each
body with no transaction open, then settles each row in its own short transaction
`WHERE lease_token = :mine`. A worker that dies mid-delivery leaves a row whose
`next_attempt_at` is its lease expiry, so it comes due again by itself.

Every delivery carries the Standard Webhooks headers `webhook-id` (the outbox id, stable across
retries: receivers deduplicate on it) and `webhook-timestamp`, and, when the webhook has a
secret, `webhook-signature` over id, timestamp and body (see `webhook_signing`: a captured
delivery cannot be replayed past the receivers' tolerance); also `X-ValueRank-Delivery` (the
same id) and `X-ValueRank-Event` (the topic). A 2xx marks the row
`delivered`; anything else (3xx included: redirects are not followed) reschedules it with
exponential backoff and full jitter, honouring a receiver's `Retry-After` up to the cap, until
`max_attempts` is spent and the row goes `dead` (dead letter), keeping `last_error` and
`last_status_code`. `retry_delivery` sends a dead row back.

A webhook's signing secret is write-only and encrypted at rest: `register_webhook` stores only
its Fernet token (`webhooks.secret_encrypted`, keyed by `VALUERANK_SECRET_KEY` through the
`SecretCipher` its caller passes; a secret with no cipher is refused with SECRET_KEY_MISSING).
`deliver_due` decrypts it, in memory, with the cipher its caller (the worker) holds, to sign. A
secret that cannot be decrypted (no key in this process, or another key) is never a reason to
send unsigned: that attempt fails, without any request, with an error naming
`VALUERANK_SECRET_KEY`, and is retried and dead-lettered like any failed delivery. No function
here returns the secret (`Webhook.has_secret` says whether one is set); outbox rows do not hold
it at all; no repr, error or listing contains it.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import String, cast, delete, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.crypto import SECRET_KEY_ENV, SecretCipher, SecretUnreadable, cipher_from_secret
from valuerank.db.engine import Database
from valuerank.db.tables import outbox, webhooks
from valuerank.errors import InvalidInputError, NotFoundError
from valuerank.queue.dialect import as_utc, db_now, db_now_plus, iso
from valuerank.queue.errors import backoff_seconds
from valuerank.queue.ids import new_id
from valuerank.queue.webhook_signing import check_secret, delivery_headers
from valuerank.queue.webhook_targets import WebhookTargetError, public_only_handlers

PENDING, DELIVERED, DEAD = "pending", "delivered", "dead"
OUTBOX_STATUSES = (PENDING, DELIVERED, DEAD)
DEFAULT_MAX_ATTEMPTS = 8
DELIVERY_HEADER = "X-ValueRank-Delivery"
EVENT_HEADER = "X-ValueRank-Event"
USER_AGENT = "ValueRank-Webhooks/1"
MAX_ERROR_CHARS = 1000
_RESPONSE_PEEK_BYTES = 500


# -- webhooks -------------------------------------------------------------------------------


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


# -- writing notifications --------------------------------------------------------------------


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


# -- delivery ---------------------------------------------------------------------------------


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


@dataclass(frozen=True)
class Response:
    status_code: int | None  # None: no HTTP answer (connection refused, timeout, …)
    error: str | None  # None on success
    retry_after: float | None = None


@dataclass
class DeliveryReport:
    claimed: int = 0
    delivered: int = 0
    retried: int = 0
    dead: int = 0
    lost: int = 0  # the lease ran out and someone else settled the row


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


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # a 3xx surfaces as an HTTPError: a failed delivery


_OPENER = urllib.request.build_opener(_NoRedirect)
_PUBLIC_OPENER = urllib.request.build_opener(_NoRedirect, *public_only_handlers())


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        return None  # an HTTP date: ignored, the backoff applies


def _post(
    url: str, body: bytes, headers: Mapping[str, str], timeout: float, public_only: bool
) -> Response:
    """Blocking POST (run in a thread). Never raises."""
    request = urllib.request.Request(url, data=body, headers=dict(headers), method="POST")
    opener = _PUBLIC_OPENER if public_only else _OPENER
    try:
        with opener.open(request, timeout=timeout) as answer:
            answer.read(_RESPONSE_PEEK_BYTES)
            return Response(status_code=answer.status, error=None)
    except urllib.error.HTTPError as exc:
        text = exc.read(_RESPONSE_PEEK_BYTES).decode("utf-8", "replace").strip()
        error = f"HTTP {exc.code}" + (f": {text}" if text else "")
        return Response(exc.code, error, _retry_after(exc.headers.get("Retry-After")))
    except WebhookTargetError as exc:  # the name resolves to the inside now
        return Response(None, f"not sent: {exc.message}")
    except Exception as exc:  # connection refused, timeout, TLS, bad URL…
        return Response(None, f"{type(exc).__name__}: {exc}")


class _Unsignable(Exception):
    """The webhook has a secret this process cannot decrypt: the delivery must not go out."""


def _secret(delivery: Delivery, cipher: SecretCipher | None) -> str | None:
    """The webhook's signing secret, decrypted; None when it has none. Raises `_Unsignable`
    (a message with no secret in it) when the secret cannot be decrypted."""
    if delivery.secret_encrypted is None:
        return None
    if cipher is None:
        raise _Unsignable(
            f"not sent: webhook {delivery.webhook_id} signs its deliveries, but "
            f"{SECRET_KEY_ENV} is not set where this worker runs (set it to the key the "
            "webhook's secret was stored with)"
        )
    try:
        secret = cipher.decrypt(
            delivery.secret_encrypted,
            what=f"the signing secret of webhook {delivery.webhook_id}",
            remedy="remove the webhook and add it again with a new secret",
        )
    except SecretUnreadable as exc:
        raise _Unsignable(f"not sent: {exc.message} ({exc.hint})") from None
    return secret


async def send(
    delivery: Delivery,
    *,
    timeout: float,
    cipher: SecretCipher | None = None,
    clock: Callable[[], float] = time.time,
) -> Response:
    """POST one delivery, signed when its webhook has a secret (decrypted with `cipher`) at
    the time `clock` reads (Unix seconds). A secret that cannot be decrypted sends nothing: a
    failed attempt, never unsigned."""
    try:
        secret = _secret(delivery, cipher)
    except _Unsignable as exc:
        return Response(None, str(exc))
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        DELIVERY_HEADER: delivery.id,
        EVENT_HEADER: delivery.topic,
        **delivery_headers(delivery.id, delivery.body, secret, now=clock()),
    }
    response = await asyncio.to_thread(
        _post, delivery.url, delivery.body, headers, timeout, delivery.public_only
    )
    if response.error is None and not (
        response.status_code is not None and 200 <= response.status_code < 300
    ):
        return Response(response.status_code, f"HTTP {response.status_code}")
    return response


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


# -- administration ---------------------------------------------------------------------------


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
