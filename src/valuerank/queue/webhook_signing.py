"""Webhook signatures as the Standard Webhooks specification defines them.

Every delivery carries `webhook-id` (the outbox id, stable across retries: receivers
deduplicate on it) and `webhook-timestamp` (Unix seconds, when this attempt was sent); a
webhook with a secret adds `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`.
Signing the id and the timestamp with the body is what lets a receiver refuse a captured
delivery replayed later: the `standardwebhooks` package's `Webhook.verify` rejects a timestamp
more than `RECEIVER_TOLERANCE_SECONDS` away from its clock, and any change to the id, the
timestamp or the body. Each attempt (a retry too) is signed afresh with its own timestamp.

The HMAC key is the secret as registered: a secret in the specification's form
`whsec_<base64>` is its decoded bytes (so any Standard Webhooks library verifies with the
secret string itself); any other secret is its UTF-8 bytes (verify with `secret.encode()`).
"""

from __future__ import annotations

import base64
import binascii
import time
from datetime import UTC, datetime

from standardwebhooks import Webhook

from valuerank.errors import InvalidInputError

ID_HEADER = "webhook-id"
TIMESTAMP_HEADER = "webhook-timestamp"
SIGNATURE_HEADER = "webhook-signature"
SECRET_PREFIX = "whsec_"
RECEIVER_TOLERANCE_SECONDS = 300  # what `standardwebhooks.Webhook.verify` allows either way


def _decoded(secret: str) -> bytes | None:
    """The key of a `whsec_<base64>` secret; None when it is not one (or not valid base64)."""
    if not secret.startswith(SECRET_PREFIX):
        return None
    text = secret[len(SECRET_PREFIX) :]
    try:
        # Padding is optional in the specification's secrets, as in the library's reading.
        key = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None
    return key or None


def check_secret(secret: str) -> None:
    """Refuse a secret that looks like the specification's `whsec_<base64>` form but is not
    valid base64: a receiver's library would read it differently from us."""
    if secret.startswith(SECRET_PREFIX) and _decoded(secret) is None:
        raise InvalidInputError(
            "a secret starting with 'whsec_' must be followed by base64 (the Standard "
            "Webhooks form)",
            hint="give whsec_ and the base64 of 24 to 64 random bytes, or a secret without "
            "that prefix",
        )


def signing_key(secret: str) -> bytes:
    """The HMAC key of a secret (see the module's docstring)."""
    return _decoded(secret) or secret.encode()


def delivery_headers(
    msg_id: str, body: bytes, secret: str | None, *, now: float | None = None
) -> dict[str, str]:
    """The Standard Webhooks headers of one attempt sent at `now` (Unix seconds; default:
    this process's clock); with `secret`, the signature too."""
    timestamp = int(time.time() if now is None else now)
    headers = {ID_HEADER: msg_id, TIMESTAMP_HEADER: str(timestamp)}
    if secret is not None:
        at = datetime.fromtimestamp(timestamp, tz=UTC)
        headers[SIGNATURE_HEADER] = Webhook(signing_key(secret)).sign(
            msg_id=msg_id, timestamp=at, data=body.decode()
        )
    return headers
