"""An outbox row's statuses: `pending` until a 2xx marks it `delivered`, or its attempts are
spent and it is `dead` (a dead letter, which `admin.retry_delivery` sends back)."""

from __future__ import annotations

PENDING, DELIVERED, DEAD = "pending", "delivered", "dead"
OUTBOX_STATUSES = (PENDING, DELIVERED, DEAD)
DEFAULT_MAX_ATTEMPTS = 8
