"""/api/webhooks: the organisation's webhooks (its admins), as `valuerank webhooks`.

Register (201), list, show, pause or resume (`PATCH {"active": …}`: a paused webhook's
notifications wait), remove (with its notifications). A signing secret is write-only: it is
stored encrypted (VALUERANK_SECRET_KEY; 503 SECRET_KEY_MISSING without one) and answered as
`has_secret` only. The URL must be a public address unless the install allows private ones
(see valuerank.queue.webhook_targets). Their deliveries are under
/api/system/notifications/outbox. Another organisation's webhook is 404 like an unknown one.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from fastapi.responses import JSONResponse
from pydantic import ConfigDict, Field, SecretStr

from valuerank.api.deps import Admin
from valuerank.api.envelope import ok
from valuerank.api.fields import NO_NUL, Body
from valuerank.api.pagination import Cursor, Limit, decode_cursor, page
from valuerank.crypto import optional_cipher
from valuerank.errors import InvalidInputError
from valuerank.queue.outbox import (
    get_webhook,
    list_webhooks,
    register_webhook,
    remove_webhook,
    set_webhook_active,
)
from valuerank.queue.webhook_targets import check_public_target
from valuerank.runs.events import webhook_topics

router = APIRouter(prefix="/api/webhooks", tags=["webhooks"])

WebhookId = Annotated[str, Path(min_length=1, max_length=64, pattern=NO_NUL)]
Topic = Annotated[str, Field(min_length=1, max_length=100, pattern=NO_NUL)]
# An http(s) URL with a host (the scheme in any case, as urlsplit reads it), no blanks or NUL.
URL_PATTERN = r"^[Hh][Tt][Tt][Pp]([Ss])?://[^/?#@:\s\x00][^\s\x00]*$"


class NewWebhook(Body):
    model_config = ConfigDict(extra="forbid", strict=True)

    # The form is checked here; whether the host resolves to a public address is not a
    # schema's to say (422 WEBHOOK_TARGET_NOT_ALLOWED, see schemathesis.toml).
    url: str = Field(
        min_length=8,
        max_length=2000,
        pattern=URL_PATTERN,
        description="http(s) URL POSTed to.",
    )
    event_types: list[Topic] = Field(
        default_factory=list,
        max_length=50,
        description="Only these event types (empty: all of them).",
    )
    secret: SecretStr | None = Field(
        default=None,
        min_length=1,
        max_length=500,
        description="Signs each delivery as Standard Webhooks do (webhook-signature: "
        "v1,<base64 HMAC-SHA256 of id.timestamp.body>; a 'whsec_<base64>' secret keys it with "
        "its decoded bytes, any other with its UTF-8 bytes); never answered.",
    )


class WebhookChange(Body):
    model_config = ConfigDict(extra="forbid", strict=True)

    active: bool = Field(description="false pauses deliveries (they wait), true resumes them.")


def _check_topics(topics: list[str]) -> None:
    known = webhook_topics()
    unknown = sorted(set(topics) - set(known))
    if unknown:
        raise InvalidInputError(
            f"unknown event type(s): {', '.join(unknown)}",
            hint=f"event types: {', '.join(known)}",
        )


@router.get("")
async def list_webhooks_route(ctx: Admin, limit: Limit = 50, cursor: Cursor = None) -> JSONResponse:
    """The organisation's webhooks by id; secrets never shown (`has_secret`)."""
    after = str(decode_cursor(cursor, arity=1)[0]) if cursor else None
    async with ctx.db.transaction() as conn:
        hooks = await list_webhooks(conn, ctx.org_id)
    rest = [h.to_dict() for h in hooks if after is None or h.id > after][: limit + 1]
    return ok(page("webhooks", rest, limit=limit, key=lambda item: [item["id"]]))


@router.post("", status_code=201)
async def create_webhook_route(body: NewWebhook, ctx: Admin) -> JSONResponse:
    """Subscribe a URL to the organisation's notifications (201). 422
    WEBHOOK_TARGET_NOT_ALLOWED for a host on loopback, a private or link-local network, or
    one that does not resolve (unless VALUERANK_WEBHOOK_PRIVATE_TARGETS; without it, every
    delivery checks the host's addresses again); 422 for an unknown event type."""
    _check_topics(body.event_types)
    public_only = not ctx.settings.webhook_private_targets
    if public_only:
        await check_public_target(body.url)
    secret = None if body.secret is None else body.secret.get_secret_value()
    cipher = optional_cipher(ctx.settings.secret_key) if secret is not None else None
    async with ctx.db.transaction(immediate=True) as conn:
        hook = await register_webhook(
            conn,
            ctx.org_id,
            body.url,
            event_types=body.event_types,
            secret=secret,
            cipher=cipher,
            public_only=public_only,
        )
    return ok(hook.to_dict(), status_code=201)


@router.get("/{webhook_id}")
async def get_webhook_route(webhook_id: WebhookId, ctx: Admin) -> JSONResponse:
    """One webhook of the organisation (404 NOT_FOUND for any other id)."""
    async with ctx.db.transaction() as conn:
        hook = await get_webhook(conn, ctx.org_id, webhook_id)
    return ok(hook.to_dict())


@router.patch("/{webhook_id}")
async def change_webhook_route(
    webhook_id: WebhookId, body: WebhookChange, ctx: Admin
) -> JSONResponse:
    """Pause (`active: false`) or resume a webhook: while paused its notifications wait and
    none are written for it."""
    async with ctx.db.transaction(immediate=True) as conn:
        await set_webhook_active(conn, ctx.org_id, webhook_id, body.active)
        hook = await get_webhook(conn, ctx.org_id, webhook_id)
    return ok(hook.to_dict())


@router.delete("/{webhook_id}")
async def remove_webhook_route(webhook_id: WebhookId, ctx: Admin) -> JSONResponse:
    """Remove a webhook and its notifications, delivered or not."""
    async with ctx.db.transaction(immediate=True) as conn:
        await remove_webhook(conn, ctx.org_id, webhook_id)
    return ok({"id": webhook_id, "removed": True})
