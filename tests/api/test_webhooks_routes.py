"""/api/webhooks on SQLite and PostgreSQL against real servers: an organisation's admin
registers, lists, pauses and removes its webhooks; a secret is write-only and signs real
deliveries to a receiver on loopback (allowed by the install's setting); private targets are
refused by default; members and other organisations get nothing."""

from __future__ import annotations

from typing import Any

import pytest
from cryptography.fernet import Fernet
from fastapi import FastAPI, Request
from sqlalchemy import select
from standardwebhooks import Webhook

from valuerank.db import Database
from valuerank.db.tables import webhooks
from valuerank.queue.outbox import enqueue_notifications

from .conftest import provision_admin

PUBLIC = "https://93.184.216.34/hooks/valuerank"  # a global address: nothing resolves it


async def test_admins_register_list_pause_and_remove(
    live: Any, assert_error: Any, db: Database
) -> None:
    async with live.client() as admin:
        made = await admin.post(
            "/api/webhooks", json={"url": PUBLIC, "event_types": ["run_complete", "task_failed"]}
        )
        assert made.status_code == 201, made.text
        hook = made.json()["data"]
        assert hook["url"] == PUBLIC and hook["active"] is True and hook["has_secret"] is False
        assert hook["event_types"] == ["run_complete", "task_failed"]
        second = (await admin.post("/api/webhooks", json={"url": PUBLIC + "/2"})).json()["data"]
        assert second["event_types"] == []  # all events
        # Checked at registration, so every delivery checks again (the name may move).
        assert await public_only(db, hook["id"]) is True

        listed = (await admin.get("/api/webhooks", params={"limit": 1})).json()["data"]
        assert listed["count"] == 1 and listed["next_cursor"] is not None
        rest = await admin.get("/api/webhooks", params={"cursor": listed["next_cursor"]})
        ids = [listed["webhooks"][0]["id"]] + [w["id"] for w in rest.json()["data"]["webhooks"]]
        assert sorted(ids) == sorted([hook["id"], second["id"]])

        paused = await admin.patch(f"/api/webhooks/{hook['id']}", json={"active": False})
        assert paused.status_code == 200 and paused.json()["data"]["active"] is False
        shown = (await admin.get(f"/api/webhooks/{hook['id']}")).json()["data"]
        assert shown["active"] is False

        removed = await admin.delete(f"/api/webhooks/{second['id']}")
        assert removed.json()["data"] == {"id": second["id"], "removed": True}
        assert_error(await admin.get(f"/api/webhooks/{second['id']}"), 404, "NOT_FOUND")
        assert_error(await admin.delete(f"/api/webhooks/{second['id']}"), 404, "NOT_FOUND")

        body = assert_error(
            await admin.post("/api/webhooks", json={"url": PUBLIC, "event_types": ["run_done"]}),
            422,
            "INVALID_INPUT",
        )
        assert "run_done" in body["error"] and "run_complete" in body["hint"]
        bad: dict[str, Any]
        for bad in (
            {"url": "ftp://93.184.216.34/x"},
            {"url": PUBLIC, "colour": "red"},
            {"url": PUBLIC, "event_types": "run_complete"},
            {"event_types": []},
        ):
            response = await admin.post("/api/webhooks", json=bad)
            assert response.status_code == 422, (bad, response.text)
        assert_error(
            await admin.patch(f"/api/webhooks/{hook['id']}", json={"active": "no"}),
            422,
            "VALIDATION_ERROR",
        )
        remaining = (await admin.get("/api/webhooks")).json()["data"]["webhooks"]
        assert [w["id"] for w in remaining] == [hook["id"]]  # refusals wrote nothing

    async with live.client_for("default", "member") as member:
        assert_error(await member.get("/api/webhooks"), 403, "FORBIDDEN")
        assert_error(await member.post("/api/webhooks", json={"url": PUBLIC}), 403, "FORBIDDEN")
    async with live.client_for("tenant", "admin") as tenant:
        assert (await tenant.get("/api/webhooks")).json()["data"]["webhooks"] == []
        for response in (
            await tenant.get(f"/api/webhooks/{hook['id']}"),
            await tenant.patch(f"/api/webhooks/{hook['id']}", json={"active": True}),
            await tenant.delete(f"/api/webhooks/{hook['id']}"),
        ):
            assert_error(response, 404, "NOT_FOUND")
    async with live.client() as admin:
        still = (await admin.get(f"/api/webhooks/{hook['id']}")).json()["data"]
        assert still["active"] is False


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/hook",
        "http://localhost/hook",
        "http://10.1.2.3/hook",
        "http://192.168.0.10/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://0.0.0.0/hook",
        "https://no-such-host.invalid/hook",
    ],
)
async def test_private_and_unresolvable_targets_are_refused(
    live: Any, assert_error: Any, url: str
) -> None:
    async with live.client() as admin:
        body = assert_error(
            await admin.post("/api/webhooks", json={"url": url}), 422, "WEBHOOK_TARGET_NOT_ALLOWED"
        )
        assert "VALUERANK_WEBHOOK_PRIVATE_TARGETS" in body["hint"]
        assert (await admin.get("/api/webhooks")).json()["data"]["webhooks"] == []


async def test_a_secret_is_write_only_and_signs_real_deliveries(
    live_server: Any,
    serve_app: Any,
    db: Database,
    org_id: str,
    assert_error: Any,
) -> None:
    received: list[tuple[dict[str, str], bytes]] = []
    receiver = FastAPI()

    @receiver.post("/hook")
    async def hook(request: Request) -> dict[str, bool]:
        received.append((dict(request.headers), await request.body()))
        return {"ok": True}

    await provision_admin(db, org_id)
    # The key is the app's setting: an app given none refuses secrets, whatever the
    # environment says; one given a key stores them and signs with them.
    async with (
        serve_app(receiver) as receiver_url,
        live_server(webhook_private_targets=True, secret_key=None) as keyless,
        keyless.client() as admin,
    ):
        url = f"{receiver_url.rstrip('/')}/hook"
        no_key = await admin.post("/api/webhooks", json={"url": url, "secret": "s3cret-value"})
        assert_error(no_key, 503, "SECRET_KEY_MISSING")
        assert (await admin.get("/api/webhooks")).json()["data"]["webhooks"] == []
    key = Fernet.generate_key().decode()
    async with (
        serve_app(receiver) as receiver_url,
        live_server(webhook_private_targets=True, secret_key=key) as live,
        live.client() as admin,
    ):
        url = f"{receiver_url.rstrip('/')}/hook"
        # "whsec_" announces the Standard Webhooks base64 form: anything else there is refused.
        malformed = await admin.post("/api/webhooks", json={"url": url, "secret": "whsec_no!"})
        assert_error(malformed, 422, "INVALID_INPUT")
        assert "whsec_" in malformed.json()["error"]
        assert (await admin.get("/api/webhooks")).json()["data"]["webhooks"] == []
        made = await admin.post(
            "/api/webhooks",
            json={"url": url, "secret": "s3cret-value", "event_types": ["run_complete"]},
        )
        assert made.status_code == 201, made.text
        assert "s3cret-value" not in made.text and made.json()["data"]["has_secret"] is True
        assert await public_only(db, made.json()["data"]["id"]) is False  # private allowed
        listed = await admin.get("/api/webhooks")
        assert "s3cret-value" not in listed.text

        async with db.transaction() as conn:
            await enqueue_notifications(conn, org_id, "run_complete", {"run_id": "r-1"})
            await enqueue_notifications(conn, org_id, "task_failed", {"run_id": "r-1"})
        drained = (await admin.post("/api/system/notifications/outbox/drain")).json()["data"]
        assert drained["delivered"] == 1 and drained["dead"] == 0
    [(headers, body)] = received  # the webhook subscribed to run_complete only
    # Signed as Standard Webhooks do: the receiver's library verifies it.
    assert Webhook(b"s3cret-value").verify(body, headers)["payload"] == {"run_id": "r-1"}


async def public_only(db: Database, webhook_id: str) -> bool:
    async with db.transaction() as conn:
        value = await conn.scalar(select(webhooks.c.public_only).where(webhooks.c.id == webhook_id))
    return bool(value)
