"""/api/queue/caps on SQLite and PostgreSQL (issue 21 item 11): an install admin lists, sets,
changes, lifts (0) and removes the global cap, an organisation's, a provider's and a model's,
and the claim honours each at once (a capped organisation's jobs wait, as `GET
/api/queue/status` shows); another organisation's admin is refused; a bad body is refused
with nothing written."""

from __future__ import annotations

from collections import Counter
from typing import Any

import httpx

from valuerank.db import Database
from valuerank.queue import JobSpec, QueueSettings, claim, enqueue_many

from .conftest import Live

NO_DEFAULT = QueueSettings(org_concurrency=None, global_concurrency=None)


async def put_jobs(
    db: Database,
    org_id: str,
    n: int,
    partition: str,
    *,
    provider: str | None = None,
    model: str | None = None,
) -> None:
    specs = [
        JobSpec(
            kind="echo",
            org_id=org_id,
            partition=partition,
            item_key=f"{partition}-{i}",
            provider=provider,
            model=model,
        )
        for i in range(n)
    ]
    async with db.transaction(immediate=True) as conn:
        await enqueue_many(conn, specs)


async def claimed_per_org(db: Database, settings: QueueSettings = NO_DEFAULT) -> Counter[str]:
    """Claim every job the caps let through: how many of each organisation's."""
    jobs = await claim(db, worker_id="w1", limit=20, settings=settings)
    return Counter(job.org_id for job in jobs)


async def caps_of(client: httpx.AsyncClient) -> dict[str, tuple[int, int, bool]]:
    listed = (await client.get("/api/queue/caps")).json()["data"]
    assert listed["count"] == len(listed["caps"]) and listed["next_cursor"] is None
    return {c["key"]: (c["in_use"], c["max"], c["is_default"]) for c in listed["caps"]}


async def test_an_install_admin_sets_changes_lifts_and_removes_caps(
    live: Live, db: Database, org_id: str, assert_error: Any
) -> None:
    acme = await live.account("acme")
    mine, theirs = f"org:{org_id}", f"org:{acme.org_id}"
    await put_jobs(db, org_id, 3, "run-mine")
    await put_jobs(db, acme.org_id, 4, "run-acme")
    async with live.client() as admin, live.client(token=acme.token) as acme_admin:
        assert await caps_of(admin) == {}
        made = await admin.put("/api/queue/caps/orgs/acme", json={"max": 1})
        assert made.status_code == 200, made.text
        assert made.json()["data"] == {"key": theirs, "scope": "org", "max": 1}
        made = await admin.put("/api/queue/caps/global", json={"max": 3})
        assert made.json()["data"] == {"key": "global", "scope": "global", "max": 3}
        assert await caps_of(admin) == {"global": (0, 3, False), theirs: (0, 1, False)}

        # The claim honours both: one of acme's jobs, three in all.
        assert await claimed_per_org(db) == {org_id: 2, acme.org_id: 1}
        status = (await acme_admin.get("/api/queue/status")).json()["data"]
        assert status["counts"]["queued"] == 3 and status["counts"]["running"] == 1
        shown = {c["key"]: (c["in_use"], c["max"]) for c in status["caps"]}
        assert shown == {"global": (3, 3), theirs: (1, 1)}

        # Changed (by id this time), then the global cap lifted with 0.
        changed = await admin.put(f"/api/queue/caps/orgs/{acme.org_id}", json={"max": 2})
        assert changed.json()["data"]["max"] == 2
        lifted = await admin.put("/api/queue/caps/global", json={"max": 0})
        assert lifted.json()["data"] == {"key": "global", "scope": "global", "max": None}
        assert await claimed_per_org(db) == {org_id: 1, acme.org_id: 1}
        assert await caps_of(admin) == {theirs: (2, 2, False)}

        # 0 lifts the organisation's cap too: its last jobs go.
        assert (await admin.put("/api/queue/caps/orgs/acme", json={"max": 0})).status_code == 200
        assert await claimed_per_org(db) == {acme.org_id: 2}
        assert await caps_of(admin) == {}
        status = (await acme_admin.get("/api/queue/status")).json()["data"]
        assert status["caps"] == [] and status["counts"]["queued"] == 0

        # DELETE removes a cap; none left is 404 CAP_NOT_FOUND; an unknown organisation 404.
        await admin.put("/api/queue/caps/global", json={"max": 7})
        await admin.put("/api/queue/caps/orgs/default", json={"max": 4})
        assert await caps_of(admin) == {"global": (0, 7, False), mine: (0, 4, False)}
        removed = await admin.delete("/api/queue/caps/global")
        assert removed.json()["data"] == {"key": "global", "removed": True}
        removed = await admin.delete(f"/api/queue/caps/orgs/{org_id}")
        assert removed.json()["data"] == {"key": mine, "removed": True}
        assert await caps_of(admin) == {}
        assert_error(await admin.delete("/api/queue/caps/global"), 404, "CAP_NOT_FOUND")
        assert_error(await admin.delete("/api/queue/caps/orgs/acme"), 404, "CAP_NOT_FOUND")
        for response in (
            await admin.put("/api/queue/caps/orgs/nowhere", json={"max": 1}),
            await admin.delete("/api/queue/caps/orgs/nowhere"),
        ):
            assert_error(response, 404, "NOT_FOUND")


async def test_a_cap_set_over_the_api_outlives_the_workers_default(
    live: Live, db: Database, assert_error: Any
) -> None:
    """The default cap the claim gives an organisation is listed as such; one set over the
    API is the organisation's own (the default leaves it alone); removing it lets the
    default back, and with no default its jobs run uncapped."""
    acme = await live.account("acme")
    key = f"org:{acme.org_id}"
    await put_jobs(db, acme.org_id, 6, "run-acme")
    async with live.client() as admin:
        with_default = QueueSettings(org_concurrency=1)
        assert await claimed_per_org(db, with_default) == {acme.org_id: 1}
        assert await caps_of(admin) == {key: (1, 1, True)}
        await admin.put("/api/queue/caps/orgs/acme", json={"max": 3})
        assert await claimed_per_org(db, with_default) == {acme.org_id: 2}
        assert await caps_of(admin) == {key: (3, 3, False)}
        removed = await admin.delete("/api/queue/caps/orgs/acme")
        assert removed.json()["data"]["removed"] is True
        assert await claimed_per_org(db) == {acme.org_id: 3}


async def test_provider_and_model_caps_are_set_and_lifted_without_limits(
    live: Live, db: Database, org_id: str, assert_error: Any
) -> None:
    """A provider's cap set by hand (no rate limits, so `DELETE /api/providers/{p}/limits`
    has nothing to remove) is cleared over HTTP too, and so is a model's."""
    await put_jobs(db, org_id, 4, "run-1", provider="openai", model="openai:gpt-4o")
    provider, model = "/api/queue/caps/providers/openai", {"model": "openai:gpt-4o"}
    async with live.client() as admin:
        made = await admin.put(provider, json={"max": 1})
        assert made.json()["data"] == {"key": "provider:openai", "scope": "provider", "max": 1}
        made = await admin.put(provider, params=model, json={"max": 2})
        expected = {"key": "model:openai:openai:gpt-4o", "scope": "model", "max": 2}
        assert made.json()["data"] == expected
        assert await claimed_per_org(db) == {org_id: 1}
        shown = (await admin.get("/api/providers/openai")).json()["data"]["caps"]
        assert sorted((c["scope"], c["in_use"], c["max"]) for c in shown) == [
            ("model", 1, 2),
            ("provider", 1, 1),
        ]
        assert_error(await admin.delete("/api/providers/openai/limits"), 404, "LIMITS_NOT_FOUND")
        lifted = await admin.put(provider, json={"max": 0})
        assert lifted.json()["data"]["max"] is None
        assert await claimed_per_org(db) == {org_id: 1}  # the model's cap holds
        removed = await admin.delete(provider, params=model)
        assert removed.json()["data"] == {"key": expected["key"], "removed": True}
        assert await claimed_per_org(db) == {org_id: 2}
        assert await caps_of(admin) == {}
        assert_error(await admin.delete(provider), 404, "CAP_NOT_FOUND")
        assert_error(
            await admin.put(provider, params={"model": "anthropic:x"}, json={"max": 1}),
            422,
            "INVALID_INPUT",
        )
        for response in (
            await admin.put("/api/queue/caps/providers/nowhere", json={"max": 1}),
            await admin.delete("/api/queue/caps/providers/nowhere"),
        ):
            assert_error(response, 404, "PROVIDER_NOT_FOUND")
        assert await caps_of(admin) == {}


async def test_caps_are_for_the_install_admin_and_bad_bodies_change_nothing(
    live: Live, assert_error: Any
) -> None:
    async with live.client() as admin:
        await admin.put("/api/queue/caps/global", json={"max": 2})
        before = await caps_of(admin)
        for bad in (
            {"max": -1},
            {"max": 1.5},  # (2.0 is the integer 2, as JSON Schema's `integer` has it)
            {"max": "3"},
            {"max": True},
            {"max": None},
            {},
            {"max": 3, "min": 1},
            {"max": 100_001},
        ):
            for path in (
                "/api/queue/caps/global",
                "/api/queue/caps/orgs/default",
                "/api/queue/caps/providers/openai",
            ):
                assert_error(await admin.put(path, json=bad), 422, "VALIDATION_ERROR")
        assert_error(
            await admin.put("/api/queue/caps/orgs/-x", json={"max": 1}), 422, "VALIDATION_ERROR"
        )
        assert await caps_of(admin) == before

    requests = [
        ("GET", "/api/queue/caps", None),
        ("PUT", "/api/queue/caps/global", {"max": 0}),
        ("DELETE", "/api/queue/caps/global", None),
        ("PUT", "/api/queue/caps/orgs/default", {"max": 0}),
        ("DELETE", "/api/queue/caps/orgs/default", None),
        ("PUT", "/api/queue/caps/providers/openai", {"max": 0}),
        ("DELETE", "/api/queue/caps/providers/openai", None),
    ]
    other_admin = await live.account("acme")  # an admin, but of another organisation
    member = await live.account("default", "member")
    for token in (other_admin.token, member.token):
        async with live.client(token=token) as client:
            for method, path, body in requests:
                response = await client.request(method, path, json=body)
                assert_error(response, 403, "FORBIDDEN")
        # Not even its own organisation's cap: fairness between organisations is the install's.
        async with live.client(token=other_admin.token) as client:
            response = await client.put("/api/queue/caps/orgs/acme", json={"max": 0})
            assert_error(response, 403, "FORBIDDEN")
    async with live.client() as admin:
        assert await caps_of(admin) == before
