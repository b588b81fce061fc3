"""Webhook deliveries signed as Standard Webhooks, on SQLite and PostgreSQL: a receiver on
loopback verifies them with the `standardwebhooks` package; a delivery signed outside its
tolerance (a capture replayed later) and one whose id, timestamp or body changed are refused."""

from __future__ import annotations

import base64
import os
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

import pytest
from standardwebhooks import Webhook, WebhookVerificationError
from tests.conftest import serve_on_loopback

from valuerank.crypto import SecretCipher, generate_key
from valuerank.errors import InvalidInputError
from valuerank.queue.outbox import (
    claim_deliveries,
    deliver_due,
    enqueue_notifications,
    list_outbox,
    list_webhooks,
    register_webhook,
    send,
)
from valuerank.queue.webhook_signing import ID_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER

if TYPE_CHECKING:
    from tests.queue.conftest import Kit

SECRET = "a-receiver's shared secret"
CIPHER = SecretCipher(generate_key())


@dataclass
class Verifier:
    """A receiver that verifies each POST with `standardwebhooks` under `key`: 200 when it
    verifies, 401 with the library's reason when not (after `fail_first` 503s to verified ones)."""

    key: str | bytes = SECRET.encode()
    url: str = ""
    fail_first: int = 0
    seen: list[tuple[dict[str, str], bytes, str]] = field(default_factory=list)  # …, verdict


@pytest.fixture
def verifier() -> Iterator[Verifier]:
    state = Verifier()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            headers = {k.lower(): v for k, v in self.headers.items()}
            try:
                Webhook(state.key).verify(body, headers)
                verdict, code = "ok", 200
            except WebhookVerificationError as exc:
                verdict, code = str(exc), 401
            if code == 200 and state.fail_first > 0:
                state.fail_first -= 1
                code = 503
            state.seen.append((headers, body, verdict))
            self.send_response(code)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    with serve_on_loopback(Handler) as base:
        state.url = f"{base}/hook"
        yield state


def _post(url: str, headers: dict[str, str], body: bytes) -> int:
    """Send a (captured, perhaps altered) delivery again, as an attacker would."""
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return exc.code


async def _hook(kit: Kit, url: str, secret: str = SECRET) -> str:
    async with kit.db.transaction() as conn:
        hook = await register_webhook(conn, kit.org_id, url, secret=secret, cipher=CIPHER)
    async with kit.db.transaction() as conn:
        await enqueue_notifications(conn, kit.org_id, "task_complete", {"n": 1})
    return hook.id


async def test_every_attempt_is_signed_afresh_and_verifies(kit: Kit, verifier: Verifier) -> None:
    verifier.fail_first = 1  # the first attempt verifies, then fails: retried
    await _hook(kit, verifier.url)
    first = await deliver_due(kit.db, limit=10, timeout=5, cipher=CIPHER, backoff_base=0.0)
    assert first.retried == 1
    second = await deliver_due(kit.db, limit=10, timeout=5, cipher=CIPHER, backoff_base=0.0)
    assert second.delivered == 1
    async with kit.db.transaction() as conn:
        (row,) = await list_outbox(conn, kit.org_id)
    assert row.status == "delivered"
    (h1, body1, ok1), (h2, body2, ok2) = verifier.seen
    assert ok1 == ok2 == "ok" and body1 == body2
    assert h1[ID_HEADER] == h2[ID_HEADER] == row.id  # stable: receivers deduplicate on it
    assert h2[SIGNATURE_HEADER].startswith("v1,")
    assert abs(int(h2[TIMESTAMP_HEADER]) - time.time()) < 60  # the attempt's own time
    assert int(h2[TIMESTAMP_HEADER]) >= int(h1[TIMESTAMP_HEADER])
    assert "x-valuerank-signature" not in h2


@pytest.mark.parametrize("offset", [-600, 600])
async def test_a_delivery_signed_outside_the_tolerance_is_refused(
    kit: Kit, verifier: Verifier, offset: int
) -> None:
    """Signed 10 minutes ago (a capture replayed now) or 10 minutes ahead: refused."""
    await _hook(kit, verifier.url)
    (delivery,) = await claim_deliveries(kit.db, limit=10, lease_seconds=60)
    response = await send(delivery, timeout=5, cipher=CIPHER, clock=lambda: time.time() + offset)
    assert response.status_code == 401
    ((headers, body, verdict),) = verifier.seen
    assert verdict == ("Message timestamp too old" if offset < 0 else "Message timestamp too new")
    # The signature itself is right: only the time gives the replay away.
    at = int(headers[TIMESTAMP_HEADER])
    with pytest.raises(WebhookVerificationError, match="too"):
        Webhook(SECRET.encode()).verify(body, headers)
    signed_at = datetime.fromtimestamp(at, tz=UTC)
    expected = Webhook(SECRET.encode()).sign(headers[ID_HEADER], signed_at, body.decode())
    assert headers[SIGNATURE_HEADER] == expected


async def test_a_changed_id_timestamp_or_body_fails_verification(
    kit: Kit, verifier: Verifier
) -> None:
    await _hook(kit, verifier.url)
    assert (await deliver_due(kit.db, limit=10, timeout=5, cipher=CIPHER)).delivered == 1
    ((headers, body, verdict),) = verifier.seen
    assert verdict == "ok"
    at = int(headers[TIMESTAMP_HEADER])
    altered = [
        ({**headers, ID_HEADER: headers[ID_HEADER] + "x"}, body),
        ({**headers, TIMESTAMP_HEADER: str(at + 1)}, body),
        ({**headers, TIMESTAMP_HEADER: str(at - 1)}, body),
        (headers, body.replace(b'"n":1', b'"n":2')),
    ]
    for changed_headers, changed_body in altered:
        assert changed_body != body or changed_headers != headers
        assert _post(verifier.url, changed_headers, changed_body) == 401
        assert verifier.seen[-1][2] == "No matching signature found"
    # Unchanged and within the tolerance it verifies: receivers deduplicate on webhook-id.
    assert _post(verifier.url, headers, body) == 200


@pytest.mark.parametrize("padding", [True, False])
async def test_a_whsec_secret_verifies_with_the_string_itself(
    kit: Kit, verifier: Verifier, padding: bool
) -> None:
    """The specification's secret form: the key is its base64-decoded bytes, so a Standard
    Webhooks library verifies with the string as given."""
    encoded = base64.b64encode(os.urandom(32)).decode()
    secret = "whsec_" + (encoded if padding else encoded.rstrip("="))
    verifier.key = secret
    await _hook(kit, verifier.url, secret=secret)
    assert (await deliver_due(kit.db, limit=10, timeout=5, cipher=CIPHER)).delivered == 1
    ((headers, body, verdict),) = verifier.seen
    assert verdict == "ok"
    with pytest.raises(WebhookVerificationError):  # not keyed by the string's own bytes
        Webhook(secret.encode()).verify(body, headers)


@pytest.mark.parametrize("secret", ["whsec_", "whsec_not base64!", "whsec_abcde", "whsec_a-b_"])
async def test_a_malformed_whsec_secret_is_refused_and_nothing_written(
    kit: Kit, secret: str
) -> None:
    async with kit.db.transaction() as conn:
        with pytest.raises(InvalidInputError, match="whsec_") as info:
            await register_webhook(
                conn, kit.org_id, "https://example.invalid/x", secret=secret, cipher=CIPHER
            )
    assert info.value.code == "INVALID_INPUT"
    async with kit.db.transaction() as conn:
        assert await list_webhooks(conn, kit.org_id) == []
