"""The outbox: notifications written with their event, delivered over HTTP, retried, dead;
webhook signing secrets encrypted at rest and never sent unsigned."""

from __future__ import annotations

import asyncio
import json
import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pytest
from sqlalchemy import select, update
from standardwebhooks import Webhook
from tests.conftest import serve_on_loopback

from valuerank.crypto import SecretCipher, SecretKeyMissing, generate_key
from valuerank.db.tables import events, outbox, webhooks
from valuerank.errors import InvalidInputError, NotFoundError
from valuerank.orgs import ensure_org
from valuerank.queue import EventType, Worker
from valuerank.queue.dialect import db_now_plus
from valuerank.queue.events import append_event
from valuerank.queue.outbox import (
    DELIVERY_HEADER,
    claim_deliveries,
    dead_letter_summary,
    deliver_due,
    enqueue_notifications,
    get_webhook,
    list_outbox,
    list_webhooks,
    register_webhook,
    remove_webhook,
    retry_delivery,
    set_webhook_active,
)
from valuerank.queue.webhook_signing import ID_HEADER, SIGNATURE_HEADER

if TYPE_CHECKING:
    from tests.conftest import Receiver
    from tests.queue.conftest import Kit

SECRET = "whsec-very-secret-value-42"
CIPHER = SecretCipher(generate_key())


class Ceiling(random.Random):
    """Full jitter at its ceiling, so a backoff is predictable."""

    def uniform(self, a: float, b: float) -> float:
        return b


async def _hook(kit: Kit, url: str, **kwargs: Any) -> str:
    if "secret" in kwargs:
        kwargs.setdefault("cipher", CIPHER)
    async with kit.db.transaction() as conn:
        return (await register_webhook(conn, kit.org_id, url, **kwargs)).id


async def _event(kit: Kit, type: EventType = EventType.PARTITION_PAUSED) -> None:
    async with kit.db.transaction(immediate=True) as conn:
        await append_event(conn, org_id=kit.org_id, partition="run-1", type=type, data={"x": 1})


async def _make_due(kit: Kit) -> None:
    async with kit.db.transaction(immediate=True) as conn:
        await conn.execute(
            update(outbox).values(next_attempt_at=db_now_plus(conn.dialect.name, -1))
        )


async def test_notifications_commit_and_roll_back_with_their_event(kit: Kit) -> None:
    await _hook(kit, "http://example.invalid/all")
    await _hook(kit, "http://example.invalid/done", event_types=["task_complete"])
    off = await _hook(kit, "http://example.invalid/off")
    async with kit.db.transaction() as conn:
        await set_webhook_active(conn, kit.org_id, off, False)
        other_org = await ensure_org(conn, "other")
        await register_webhook(conn, other_org, "http://example.invalid/other")

    with pytest.raises(RuntimeError):
        async with kit.db.transaction(immediate=True) as conn:
            await append_event(
                conn, org_id=kit.org_id, partition="run-1", type=EventType.PARTITION_PAUSED
            )
            assert len(await list_outbox(conn, kit.org_id)) == 1  # visible inside…
            raise RuntimeError("roll back")
    async with kit.db.transaction() as conn:  # …and gone with the event
        assert (await conn.execute(select(events))).first() is None
        assert await list_outbox(conn, kit.org_id) == []

    await _event(kit)  # subscribed: only the catch-all active webhook of this org
    await _event(kit, EventType.TASK_COMPLETE)  # both active webhooks
    async with kit.db.transaction() as conn:
        rows = await list_outbox(conn, kit.org_id)
    assert sorted(r.topic for r in rows) == ["partition_paused", "task_complete", "task_complete"]
    paused = next(r for r in rows if r.topic == "partition_paused")
    assert paused.status == "pending" and paused.attempts == 0
    assert paused.payload == {
        "partition": "run-1",
        "seq": 1,
        "type": "partition_paused",
        "data": {"x": 1},
    }


async def test_delivery_is_signed_and_marked_delivered(kit: Kit, receiver: Receiver) -> None:
    hook_id = await _hook(kit, receiver.url, secret=SECRET)
    await _event(kit)
    report = await deliver_due(kit.db, limit=10, timeout=5, cipher=CIPHER)
    assert (report.claimed, report.delivered) == (1, 1)
    ((headers, body),) = receiver.requests
    sent = _verified(SECRET, headers, body)
    assert sent["topic"] == "partition_paused" and sent["payload"]["data"] == {"x": 1}
    assert headers[DELIVERY_HEADER.lower()] == headers[ID_HEADER] == sent["id"]
    assert "x-valuerank-signature" not in headers  # the body-only signature is gone
    async with kit.db.transaction() as conn:
        (row,) = await list_outbox(conn, kit.org_id, webhook_id=hook_id)
    assert row.status == "delivered" and row.last_status_code == 200 and row.delivered_at
    assert (await deliver_due(kit.db, limit=10, timeout=5, cipher=CIPHER)).claimed == 0


async def test_unsigned_without_secret(kit: Kit, receiver: Receiver) -> None:
    await _hook(kit, receiver.url)
    await _event(kit)
    assert (await deliver_due(kit.db, limit=10, timeout=5)).delivered == 1
    ((headers, _),) = receiver.requests
    assert SIGNATURE_HEADER.lower() not in headers


async def test_failures_back_off_then_dead_letter_then_retry(kit: Kit, receiver: Receiver) -> None:
    receiver.default = 500
    hook_id = await _hook(kit, receiver.url, secret=SECRET)
    async with kit.db.transaction() as conn:
        (outbox_id,) = await enqueue_notifications(
            conn, kit.org_id, "custom", {"k": "v"}, max_attempts=3
        )
    deliver = {
        "limit": 10,
        "timeout": 5,
        "backoff_base": 60.0,
        "rng": Ceiling(),
        "cipher": CIPHER,
    }
    report = await deliver_due(kit.db, **deliver)  # type: ignore[arg-type]
    assert (report.claimed, report.retried) == (1, 1)
    async with kit.db.transaction() as conn:
        (row,) = await list_outbox(conn, kit.org_id)
    assert row.status == "pending" and row.attempts == 1
    assert row.last_status_code == 500 and row.last_error and "HTTP 500" in row.last_error
    # Full jitter at its ceiling: base · 2^0 = 60 s after the failure.
    wait = row.next_attempt_at - row.created_at
    assert timedelta(seconds=55) < wait < timedelta(seconds=65)
    assert (await deliver_due(kit.db, **deliver)).claimed == 0  # type: ignore[arg-type]

    await _make_due(kit)
    assert (await deliver_due(kit.db, **deliver)).retried == 1  # type: ignore[arg-type]
    async with kit.db.transaction() as conn:
        (row,) = await list_outbox(conn, kit.org_id)
    wait = row.next_attempt_at - row.created_at  # second failure: 120 s
    assert timedelta(seconds=110) < wait < timedelta(seconds=130)
    await _make_due(kit)
    assert (await deliver_due(kit.db, **deliver)).dead == 1  # type: ignore[arg-type]
    assert len(receiver.requests) == 3
    async with kit.db.transaction() as conn:
        (dead,) = await list_outbox(conn, kit.org_id, status="dead")
        assert dead.attempts == 3 and dead.last_status_code == 500
        (group,) = await dead_letter_summary(conn, kit.org_id)
        assert (group.topic, group.webhook_id, group.count) == ("custom", hook_id, 1)
        assert group.last_error and "HTTP 500" in group.last_error
    await _make_due(kit)
    assert (await deliver_due(kit.db, **deliver)).claimed == 0  # type: ignore[arg-type]

    async with kit.db.transaction() as conn:
        again = await retry_delivery(conn, kit.org_id, outbox_id)
        assert again.status == "pending" and again.attempts == 0
        with pytest.raises(InvalidInputError):
            await retry_delivery(conn, kit.org_id, outbox_id)  # not dead any more
        with pytest.raises(NotFoundError):
            await retry_delivery(conn, kit.org_id, "nope")
    receiver.default = 200
    assert (await deliver_due(kit.db, **deliver)).delivered == 1  # type: ignore[arg-type]
    async with kit.db.transaction() as conn:
        assert await dead_letter_summary(conn, kit.org_id) == []


async def test_unreachable_receiver_is_a_failure_without_status(kit: Kit) -> None:
    await _hook(kit, "http://127.0.0.1:9/nothing-listens")
    await _event(kit)
    report = await deliver_due(kit.db, limit=10, timeout=2)
    assert report.retried == 1
    async with kit.db.transaction() as conn:
        (row,) = await list_outbox(conn, kit.org_id)
    assert row.last_status_code is None and row.last_error


async def test_a_public_only_webhook_never_reaches_an_address_inside(
    kit: Kit, receiver: Receiver
) -> None:
    """A webhook checked at registration whose name resolves inside by the time it delivers
    (DNS rebinding; here `localhost`, and the loopback literal) is not sent: a failed attempt
    that says why. The same receiver, registered without the check, gets its delivery."""
    port = urlsplit(receiver.url).port
    inside = [receiver.url, f"http://localhost:{port}/hook", f"https://localhost:{port}/hook"]
    for url in inside:
        await _hook(kit, url, public_only=True)
    await _event(kit)
    report = await deliver_due(kit.db, limit=10, timeout=5)
    assert (report.claimed, report.delivered, report.retried) == (3, 0, 3)
    assert receiver.requests == []
    async with kit.db.transaction() as conn:
        rows = await list_outbox(conn, kit.org_id)
    for row in rows:
        assert row.last_status_code is None
        assert row.last_error is not None and row.last_error.startswith("not sent: ")
        assert "not public" in row.last_error and "127.0.0.1" in row.last_error

    await _hook(kit, receiver.url)  # registered by an operator: any address
    await _event(kit, EventType.TASK_COMPLETE)
    assert (await deliver_due(kit.db, limit=10, timeout=5)).delivered == 1
    assert len(receiver.requests) == 1


async def test_listing_filters_and_never_shows_the_secret(kit: Kit, receiver: Receiver) -> None:
    receiver.default = 410
    hook_id = await _hook(kit, receiver.url, secret=SECRET, event_types=["a", "b"])
    async with kit.db.transaction() as conn:
        await enqueue_notifications(conn, kit.org_id, "a", {"n": 1}, max_attempts=1)
        await enqueue_notifications(conn, kit.org_id, "b", {"n": 2}, max_attempts=1)
        await enqueue_notifications(conn, kit.org_id, "c", {"n": 3})  # not subscribed
    assert (await deliver_due(kit.db, limit=10, timeout=5, cipher=CIPHER)).dead == 2
    async with kit.db.transaction() as conn:
        await enqueue_notifications(conn, kit.org_id, "a", {"n": 4})
        assert [r.payload for r in await list_outbox(conn, kit.org_id, topic="a")] == [
            {"n": 4},
            {"n": 1},
        ]
        assert len(await list_outbox(conn, kit.org_id, status="dead")) == 2
        assert len(await list_outbox(conn, kit.org_id, status="pending", topic="a")) == 1
        assert await list_outbox(conn, kit.org_id, topic="c") == []
        assert len(await list_outbox(conn, kit.org_id, limit=1)) == 1
        with pytest.raises(InvalidInputError):
            await list_outbox(conn, kit.org_id, status="lost")
        other = await ensure_org(conn, "other")
        assert await list_outbox(conn, other) == []
        hooks = await list_webhooks(conn, kit.org_id)
        summary = await dead_letter_summary(conn, kit.org_id)
        listing = await list_outbox(conn, kit.org_id)
    assert [(h.id, h.has_secret, h.event_types) for h in hooks] == [(hook_id, True, ["a", "b"])]
    assert [(g.topic, g.count) for g in summary] == [("a", 1), ("b", 1)]
    for shown in (hooks, summary, listing):
        assert SECRET not in repr(shown)
    for wh in hooks:
        assert not hasattr(wh, "secret")


async def test_webhook_validation_and_removal(kit: Kit) -> None:
    async with kit.db.transaction() as conn:
        with pytest.raises(InvalidInputError):
            await register_webhook(conn, kit.org_id, "ftp://example.invalid/x")
        hook = await register_webhook(conn, kit.org_id, "https://example.invalid/x")
        await enqueue_notifications(conn, kit.org_id, "t", {})
        await remove_webhook(conn, kit.org_id, hook.id)
        assert await list_webhooks(conn, kit.org_id) == []
        assert await list_outbox(conn, kit.org_id) == []
        with pytest.raises(NotFoundError):
            await remove_webhook(conn, kit.org_id, hook.id)


async def test_concurrent_drains_deliver_each_notification_once(
    kit: Kit, receiver: Receiver
) -> None:
    await _hook(kit, receiver.url)
    async with kit.db.transaction() as conn:
        for i in range(6):
            await enqueue_notifications(conn, kit.org_id, "t", {"i": i})
    reports = await asyncio.gather(*(deliver_due(kit.db, limit=3, timeout=5) for _ in range(3)))
    assert sum(r.delivered for r in reports) == 6
    assert len(receiver.requests) == 6


async def test_the_worker_drains_the_outbox(kit: Kit, receiver: Receiver) -> None:
    await _hook(kit, receiver.url, event_types=["task_complete"], secret=SECRET)
    await kit.put()
    settings = kit.settings.model_copy(update={"notification_drain_seconds": 0.05})
    worker = Worker(kit.db, settings=settings, handlers={"echo": _echo}, cipher=CIPHER)
    runner = asyncio.create_task(worker.run_forever())
    try:
        await asyncio.to_thread(receiver.wait)
    finally:
        worker.stop()
        await runner
    ((headers, body),) = receiver.requests
    assert json.loads(body)["topic"] == "task_complete"
    _verified(SECRET, headers, body)


async def _echo(job: Any) -> Any:
    return job.payload


def _verified(secret: str, headers: dict[str, str], body: bytes) -> Any:
    """The body, once a Standard Webhooks receiver has verified it (raises otherwise)."""
    return Webhook(secret.encode()).verify(body, headers)


async def test_the_secret_is_stored_encrypted(kit: Kit) -> None:
    hook_id = await _hook(kit, "https://example.invalid/x", secret=SECRET)
    async with kit.db.transaction() as conn:
        (token,) = (
            await conn.execute(select(webhooks.c.secret_encrypted).where(webhooks.c.id == hook_id))
        ).one()
        stored = [str(v) for v in (await conn.execute(select(webhooks))).one()]
        hook = await get_webhook(conn, kit.org_id, hook_id)
    assert token and SECRET not in token
    assert not any(SECRET in value for value in stored)  # in no column at all
    assert CIPHER.decrypt(token) == SECRET
    assert hook.has_secret and SECRET not in repr(hook) and token not in repr(hook)
    assert SECRET not in json.dumps(hook.to_dict()) and token not in json.dumps(hook.to_dict())


async def test_a_secret_without_a_key_is_refused_and_nothing_is_written(kit: Kit) -> None:
    async with kit.db.transaction() as conn:
        with pytest.raises(SecretKeyMissing) as info:
            await register_webhook(conn, kit.org_id, "https://example.invalid/x", secret=SECRET)
    err = info.value
    assert err.code == "SECRET_KEY_MISSING"
    assert "VALUERANK_SECRET_KEY" in err.message and "webhook" in err.message
    assert "valuerank credentials keygen" in (err.hint or "")
    assert SECRET not in str(err)
    async with kit.db.transaction() as conn:
        assert await list_webhooks(conn, kit.org_id) == []
        # Without a secret no key is needed.
        hook = await register_webhook(conn, kit.org_id, "https://example.invalid/y")
    assert not hook.has_secret


@pytest.mark.parametrize("key", ["wrong", "none"])
async def test_an_undecryptable_secret_is_never_sent_unsigned(
    kit: Kit, receiver: Receiver, key: str
) -> None:
    """Another key (or none) in the worker: nothing is sent; the attempt fails with an error
    naming VALUERANK_SECRET_KEY, backs off, dead-letters; the right key then delivers."""
    hook_id = await _hook(kit, receiver.url, secret=SECRET)
    async with kit.db.transaction() as conn:
        (outbox_id,) = await enqueue_notifications(conn, kit.org_id, "t", {}, max_attempts=2)
    cipher = SecretCipher(generate_key()) if key == "wrong" else None
    deliver: dict[str, Any] = {"limit": 10, "timeout": 5, "backoff_base": 60.0, "rng": Ceiling()}
    report = await deliver_due(kit.db, cipher=cipher, **deliver)
    assert (report.claimed, report.retried, report.delivered) == (1, 1, 0)
    assert receiver.requests == []
    async with kit.db.transaction() as conn:
        (row,) = await list_outbox(conn, kit.org_id)
    assert row.status == "pending" and row.attempts == 1 and row.last_status_code is None
    error = row.last_error or ""
    assert error.startswith("not sent: ") and "VALUERANK_SECRET_KEY" in error
    assert hook_id in error
    assert SECRET not in error
    wait = row.next_attempt_at - row.created_at  # the usual backoff: 60 s at the ceiling
    assert timedelta(seconds=55) < wait < timedelta(seconds=65)

    await _make_due(kit)
    assert (await deliver_due(kit.db, cipher=cipher, **deliver)).dead == 1
    assert receiver.requests == []
    async with kit.db.transaction() as conn:
        (group,) = await dead_letter_summary(conn, kit.org_id)
        assert group.last_error and "VALUERANK_SECRET_KEY" in group.last_error
        assert SECRET not in group.last_error
        await retry_delivery(conn, kit.org_id, outbox_id)
    assert (await deliver_due(kit.db, cipher=CIPHER, **deliver)).delivered == 1
    ((headers, body),) = receiver.requests
    _verified(SECRET, headers, body)


async def test_a_claimed_delivery_shows_neither_secret_nor_token(kit: Kit) -> None:
    await _hook(kit, "https://example.invalid/x", secret=SECRET)
    await _event(kit)
    (delivery,) = await claim_deliveries(kit.db, limit=10, lease_seconds=30)
    assert delivery.secret_encrypted and CIPHER.decrypt(delivery.secret_encrypted) == SECRET
    assert SECRET not in repr(delivery) and delivery.secret_encrypted not in repr(delivery)


async def test_get_webhook_is_scoped_to_the_organisation(kit: Kit) -> None:
    hook_id = await _hook(kit, "https://example.invalid/x")
    async with kit.db.transaction() as conn:
        other = await ensure_org(conn, "other")
        assert (await get_webhook(conn, kit.org_id, hook_id)).id == hook_id
        with pytest.raises(NotFoundError):
            await get_webhook(conn, other, hook_id)
        with pytest.raises(NotFoundError):
            await remove_webhook(conn, other, hook_id)


async def test_listing_by_several_statuses(kit: Kit, receiver: Receiver) -> None:
    receiver.statuses = [200, 410]
    await _hook(kit, receiver.url)
    async with kit.db.transaction() as conn:
        await enqueue_notifications(conn, kit.org_id, "a", {}, max_attempts=1)
        await enqueue_notifications(conn, kit.org_id, "b", {}, max_attempts=1)
    assert (await deliver_due(kit.db, limit=1, timeout=5)).delivered == 1
    assert (await deliver_due(kit.db, limit=1, timeout=5)).dead == 1
    async with kit.db.transaction() as conn:
        await enqueue_notifications(conn, kit.org_id, "c", {})
        both = await list_outbox(conn, kit.org_id, status=["dead", "pending"])
        every = await list_outbox(conn, kit.org_id, status=[])
        with pytest.raises(InvalidInputError):
            await list_outbox(conn, kit.org_id, status=["dead", "lost"])
    assert sorted(r.status for r in both) == ["dead", "pending"]
    assert len(every) == 3


@pytest.mark.parametrize("form", ["seconds", "http-date"])
async def test_a_receivers_retry_after_is_honoured_in_either_form(kit: Kit, form: str) -> None:
    """503 with `Retry-After: 300` or the HTTP date 300 s ahead: the next attempt waits it (the
    backoff alone would retry after 0.01 s); the one parser the providers' 429s use."""

    class Busy(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(503)
            when = (
                "300"
                if form == "seconds"
                else format_datetime(datetime.now(UTC) + timedelta(seconds=300), usegmt=True)
            )
            self.send_header("Retry-After", when)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    with serve_on_loopback(Busy) as base:
        await _hook(kit, f"{base}/hook")
        await _event(kit)
        report = await deliver_due(kit.db, timeout=5, backoff_base=0.01, rng=Ceiling())
    assert report.retried == 1
    async with kit.db.transaction() as conn:
        (row,) = await list_outbox(conn, kit.org_id)
    assert row.last_status_code == 503
    wait = row.next_attempt_at - row.created_at
    assert timedelta(seconds=290) < wait < timedelta(seconds=310)
