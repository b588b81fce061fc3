"""The outbox: webhook notifications written with the change they report, delivered later.

One submodule per step of a notification's life:

* `registry`: the webhooks an organisation subscribes (their secrets write-only, encrypted);
* `notify`: `enqueue_notifications`, in the caller's transaction (every event does it, see
  `events.py`): the notification exists if and only if the change committed;
* `claiming`: due rows leased in one short transaction (a fencing token, like jobs; the claim
  counts the attempt);
* `sending`: one signed POST with no transaction open (Standard Webhooks headers);
* `settling`: `deliver_due` claims, sends, then settles each row in its own short transaction
  `WHERE lease_token = :mine`: delivered, retried with backoff (honouring `Retry-After`), or
  dead after `max_attempts`;
* `admin`: listing, dead letters, `retry_delivery`;
* `statuses`: `pending`, `delivered`, `dead`.

Delivery is at-least-once: a worker that dies mid-delivery leaves a row whose
`next_attempt_at` is its lease expiry, so it comes due again by itself; receivers deduplicate
on `webhook-id`.

Each name below is imported from its submodule when first used (PEP 562, as in
`valuerank.queue`): the statuses, which the metrics and maintenance read, do not bring the
HTTP client and the signing with them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from valuerank.lazy import exports_by_name, load_export

if TYPE_CHECKING:
    from valuerank.queue.outbox.admin import (
        DeadLetterGroup,
        NotificationNotFoundError,
        OutboxEntry,
        dead_letter_summary,
        list_outbox,
        retry_delivery,
    )
    from valuerank.queue.outbox.claiming import Delivery, claim_deliveries, encode_body
    from valuerank.queue.outbox.notify import enqueue_notifications
    from valuerank.queue.outbox.registry import (
        Webhook,
        get_webhook,
        list_webhooks,
        register_webhook,
        remove_webhook,
        set_webhook_active,
    )
    from valuerank.queue.outbox.sending import (
        DELIVERY_HEADER,
        EVENT_HEADER,
        USER_AGENT,
        Response,
        send,
    )
    from valuerank.queue.outbox.settling import MAX_ERROR_CHARS, DeliveryReport, deliver_due
    from valuerank.queue.outbox.statuses import (
        DEAD,
        DEFAULT_MAX_ATTEMPTS,
        DELIVERED,
        OUTBOX_STATUSES,
        PENDING,
    )

# Each submodule → the names the package exports from it (tests/test_lazy.py holds these,
# the imports above and `__all__` equal).
_SUBMODULE_EXPORTS: dict[str, tuple[str, ...]] = {
    "admin": (
        "DeadLetterGroup",
        "NotificationNotFoundError",
        "OutboxEntry",
        "dead_letter_summary",
        "list_outbox",
        "retry_delivery",
    ),
    "claiming": ("Delivery", "claim_deliveries", "encode_body"),
    "notify": ("enqueue_notifications",),
    "registry": (
        "Webhook",
        "get_webhook",
        "list_webhooks",
        "register_webhook",
        "remove_webhook",
        "set_webhook_active",
    ),
    "sending": ("DELIVERY_HEADER", "EVENT_HEADER", "USER_AGENT", "Response", "send"),
    "settling": ("MAX_ERROR_CHARS", "DeliveryReport", "deliver_due"),
    "statuses": ("DEAD", "DEFAULT_MAX_ATTEMPTS", "DELIVERED", "OUTBOX_STATUSES", "PENDING"),
}
_EXPORTS = exports_by_name(_SUBMODULE_EXPORTS)


def __getattr__(name: str) -> Any:
    return load_export(__name__, globals(), _EXPORTS, name)


__all__ = [
    "DEAD",
    "DEFAULT_MAX_ATTEMPTS",
    "DELIVERED",
    "DELIVERY_HEADER",
    "EVENT_HEADER",
    "MAX_ERROR_CHARS",
    "OUTBOX_STATUSES",
    "PENDING",
    "USER_AGENT",
    "DeadLetterGroup",
    "Delivery",
    "DeliveryReport",
    "NotificationNotFoundError",
    "OutboxEntry",
    "Response",
    "Webhook",
    "claim_deliveries",
    "dead_letter_summary",
    "deliver_due",
    "encode_body",
    "enqueue_notifications",
    "get_webhook",
    "list_outbox",
    "list_webhooks",
    "register_webhook",
    "remove_webhook",
    "retry_delivery",
    "send",
    "set_webhook_active",
]
