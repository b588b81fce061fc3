"""/api/providers on SQLite and PostgreSQL against the real server: status (queue counts of
the caller's organisation, rate-limit state), limits (set, lift with 0, remove), pause and
resume; viewers read, only admins change."""

from __future__ import annotations

from typing import Any

from valuerank.db import Database
from valuerank.orgs import ensure_org
from valuerank.queue import JobSpec, enqueue_many
from valuerank.queue.ratelimit import block_bucket


async def test_status_limits_and_rate_limit_state(
    live: Any, db: Database, org_id: str, assert_error: Any
) -> None:
    async with db.transaction() as conn:
        other = await ensure_org(conn, "elsewhere")
        await enqueue_many(
            conn,
            [
                JobSpec(kind="noop", org_id=org_id, provider="openai"),
                JobSpec(kind="noop", org_id=org_id, provider="openai"),
                JobSpec(kind="noop", org_id=other, provider="openai"),
            ],
        )
    async with live.client_for("default", "viewer") as viewer:
        listed = (await viewer.get("/api/providers")).json()["data"]
        names = [p["name"] for p in listed["providers"]]
        assert {"openai", "anthropic", "scripted"} <= set(names) and names == sorted(names)
        openai = next(p for p in listed["providers"] if p["name"] == "openai")
        assert openai["queue_length"] == 2  # the other organisation's job is not counted
        assert openai["rate_limit"] == "none" and openai["limits"] == []
        assert openai["paused"] is False
        first = (await viewer.get("/api/providers", params={"limit": 2})).json()["data"]
        rest = await viewer.get(
            "/api/providers", params={"limit": 500, "cursor": first["next_cursor"]}
        )
        paged = [p["name"] for p in first["providers"] + rest.json()["data"]["providers"]]
        assert paged == names

    async with live.client() as admin:
        made = await admin.put(
            "/api/providers/openai/limits", json={"rpm": 500, "tpm": 30000, "concurrency": 4}
        )
        assert made.status_code == 200, made.text
        row = made.json()["data"]
        assert (row["rpm"], row["tpm"], row["concurrency"]) == (500.0, 30000.0, 4)
        assert row["model"] is None and row["blocked_until"] is None
        model = await admin.put(
            "/api/providers/openai/limits",
            json={"model": "openai:gpt-4.1", "min_interval_ms": 50},
        )
        assert model.json()["data"]["model"] == "openai:gpt-4.1"
        shown = (await admin.get("/api/providers/openai")).json()["data"]
        assert shown["rate_limit"] == "open"
        assert [(r["model"], r["rpm"]) for r in shown["limits"]] == [
            (None, 500.0),
            ("openai:gpt-4.1", None),
        ]
        assert [(c["scope"], c["max"]) for c in shown["caps"]] == [("provider", 4)]

        lifted = await admin.put("/api/providers/openai/limits", json={"rpm": 0})
        assert lifted.json()["data"]["rpm"] is None and lifted.json()["data"]["tpm"] is None
        assert (await admin.get("/api/providers/openai")).json()["data"]["caps"] == []

        async with db.transaction() as conn:
            await block_bucket(conn, lifted.json()["data"]["key"], 600)
        blocked = (await admin.get("/api/providers/openai")).json()["data"]
        assert blocked["rate_limit"] == "blocked" and blocked["blocked_until"] is not None

        removed = await admin.delete("/api/providers/openai/limits")
        assert removed.json()["data"]["removed"] is True
        again = await admin.delete("/api/providers/openai/limits")
        assert_error(again, 404, "LIMITS_NOT_FOUND")
        gone = await admin.delete(
            "/api/providers/openai/limits", params={"model": "openai:gpt-4.1"}
        )
        assert gone.status_code == 200

        negative = await admin.put("/api/providers/openai/limits", json={"rpm": -5})
        assert_error(negative, 422, "VALIDATION_ERROR")
        extra = await admin.put("/api/providers/openai/limits", json={"rpn": 5})
        assert_error(extra, 422, "VALIDATION_ERROR")
        for response in (
            await admin.get("/api/providers/nowhere"),
            await admin.put("/api/providers/nowhere/limits", json={"rpm": 5}),
            await admin.delete("/api/providers/nowhere/limits"),
            await admin.post("/api/providers/nowhere/pause"),
        ):
            assert_error(response, 404, "PROVIDER_NOT_FOUND")
        assert_error(await admin.get("/api/providers/-x"), 422, "VALIDATION_ERROR")


async def test_pause_and_resume_need_an_admin(live: Any, assert_error: Any) -> None:
    async with live.client_for("default", "member") as member:
        for response in (
            await member.post("/api/providers/anthropic/pause"),
            await member.put("/api/providers/anthropic/limits", json={"rpm": 5}),
            await member.delete("/api/providers/anthropic/limits"),
        ):
            assert_error(response, 403, "FORBIDDEN")
    async with live.client() as admin:
        paused = (await admin.post("/api/providers/anthropic/pause")).json()["data"]
        assert paused == {"provider": "anthropic", "paused": True, "changed": True}
        twice = (await admin.post("/api/providers/anthropic/pause")).json()["data"]
        assert twice["changed"] is False
    async with live.client_for("default", "viewer") as viewer:
        shown = (await viewer.get("/api/providers/anthropic")).json()["data"]
        assert shown["paused"] is True
        assert_error(await viewer.post("/api/providers/anthropic/resume"), 403, "FORBIDDEN")
    async with live.client() as admin:
        resumed = (await admin.post("/api/providers/anthropic/resume")).json()["data"]
        assert resumed == {"provider": "anthropic", "paused": False, "changed": True}
        shown = (await admin.get("/api/providers/anthropic")).json()["data"]
        assert shown["paused"] is False


async def test_another_organisations_admin_cannot_change_the_shared_providers(
    live: Any, assert_error: Any
) -> None:
    """Limits and pauses act on every organisation's jobs: only the install's (default
    organisation's) admins may change them; a tenant's admin may read them."""
    async with live.client_for("tenant", "admin") as tenant:
        for response in (
            await tenant.post("/api/providers/anthropic/pause"),
            await tenant.put("/api/providers/anthropic/limits", json={"rpm": 5}),
            await tenant.delete("/api/providers/anthropic/limits"),
        ):
            body = assert_error(response, 403, "FORBIDDEN")
            assert "default organisation" in body["error"]
        assert (await tenant.get("/api/providers/anthropic")).json()["data"]["paused"] is False
