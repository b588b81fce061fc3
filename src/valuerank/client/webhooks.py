"""Webhooks and their deliveries asked of a server (`valuerank webhooks …` with
VALUERANK_API_URL set), in the shapes the local commands print."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from valuerank.client.api import ApiClient, ApiError, segment

OUTBOX = "/api/system/notifications/outbox"


def add_webhook(
    client: ApiClient, url: str, events: Sequence[str], secret: str | None
) -> dict[str, Any]:
    """POST /api/webhooks; the secret travels in the body only (the server stores it
    encrypted with its own VALUERANK_SECRET_KEY and never answers it). A URL or secret the
    database would refuse is refused here alike (INVALID_INPUT, not the route's schema's
    VALIDATION_ERROR)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ApiError(
            f"invalid webhook url {url!r}", code="INVALID_INPUT", hint="use an http(s):// URL"
        )
    body: dict[str, Any] = {"url": url, "event_types": list(events)}
    if secret is not None:
        if not secret:
            raise ApiError(
                "an empty secret signs nothing", code="INVALID_INPUT", hint="omit it or give one"
            )
        body["secret"] = secret
    data: dict[str, Any] = client.post("/api/webhooks", body)
    return data


def list_webhooks(client: ApiClient) -> list[dict[str, Any]]:
    return client.items("/api/webhooks", "webhooks")


def remove_webhook(client: ApiClient, webhook_id: str) -> None:
    client.delete(f"/api/webhooks/{segment(webhook_id)}")


def deliveries(
    client: ApiClient,
    *,
    statuses: Sequence[str],
    webhook_id: str | None,
    topic: str | None,
    limit: int,
) -> list[dict[str, Any]]:
    """The newest `limit` deliveries in any of `statuses` (none: all), as the local list: by
    id, newest first. An unknown webhook is NOT_FOUND, not an empty list."""
    if webhook_id is not None:
        client.get(f"/api/webhooks/{segment(webhook_id)}")
    found: dict[str, dict[str, Any]] = {}
    wanted: list[str | None] = [*statuses] or [None]  # the route filters by one at a time
    for status in wanted:
        for entry in client.items(
            OUTBOX,
            "notifications",
            most=limit,
            status=status,
            event_type=topic,
            webhook_id=webhook_id,
        ):
            found[entry["id"]] = entry
    return sorted(found.values(), key=lambda entry: entry["id"], reverse=True)[:limit]


def dead_letters(client: ApiClient) -> list[dict[str, Any]]:
    groups: list[dict[str, Any]] = client.get(f"{OUTBOX}/dead-letter-summary")["groups"]
    return groups


def retry_delivery(client: ApiClient, delivery_id: str) -> dict[str, Any]:
    data: dict[str, Any] = client.post(f"{OUTBOX}/{segment(delivery_id)}/retry")
    return data
