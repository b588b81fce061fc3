"""Sending one claimed notification: a POST with no transaction open, signed when its webhook
has a secret; it never raises, it says what happened (`Response`).

Every delivery carries the Standard Webhooks headers `webhook-id` (the outbox id, stable across
retries: receivers deduplicate on it) and `webhook-timestamp`, and, when the webhook has a
secret, `webhook-signature` over id, timestamp and body (see `webhook_signing`); also
`X-ValueRank-Delivery` (the same id) and `X-ValueRank-Event` (the topic). Redirects are not
followed (a 3xx is a failed attempt). A secret that cannot be decrypted (no key in this
process, or another key) is never a reason to send unsigned: nothing is sent and the attempt
fails with an error naming `VALUERANK_SECRET_KEY`.
"""

from __future__ import annotations

import asyncio
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from valuerank.crypto import SECRET_KEY_ENV, SecretCipher, SecretUnreadable
from valuerank.queue.outbox.claiming import Delivery
from valuerank.queue.webhook_signing import delivery_headers
from valuerank.queue.webhook_targets import WebhookTargetError, public_only_handlers
from valuerank.ratelimit_headers import parse_retry_after

DELIVERY_HEADER = "X-ValueRank-Delivery"
EVENT_HEADER = "X-ValueRank-Event"
USER_AGENT = "ValueRank-Webhooks/1"
_RESPONSE_PEEK_BYTES = 500


@dataclass(frozen=True)
class Response:
    status_code: int | None  # None: no HTTP answer (connection refused, timeout, …)
    error: str | None  # None on success
    retry_after: float | None = None


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # a 3xx surfaces as an HTTPError: a failed delivery


_OPENER = urllib.request.build_opener(_NoRedirect)
_PUBLIC_OPENER = urllib.request.build_opener(_NoRedirect, *public_only_handlers())


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
        # Seconds or an HTTP date (the one parser the providers' 429s use too).
        wait = parse_retry_after(exc.headers.get("Retry-After") or "")
        return Response(exc.code, error, wait)
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
