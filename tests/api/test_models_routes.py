"""/api/models on SQLite and PostgreSQL against the real server: the registry (seeded from
the catalog on first read), pages, provider filter, one model, and the check run creation
applies (UNKNOWN_MODEL)."""

from __future__ import annotations

from typing import Any

from valuerank.db import Database
from valuerank.registry import update_model


async def test_list_show_and_filter(live: Any, db: Database, assert_error: Any) -> None:
    async with live.client_for("default", "viewer") as client:
        listed = (await client.get("/api/models", params={"limit": 500})).json()["data"]
        assert listed["count"] > 5 and listed["next_cursor"] is None
        ids = [m["id"] for m in listed["models"]]
        assert "scripted:utilitarian" in ids
        keys = [(m["provider"], m["name"]) for m in listed["models"]]
        assert keys == sorted(keys)

        walked: list[str] = []
        params: dict[str, Any] = {"limit": 7}
        while True:
            body = (await client.get("/api/models", params=params)).json()["data"]
            walked += [m["id"] for m in body["models"]]
            if body["next_cursor"] is None:
                break
            params = {"limit": 7, "cursor": body["next_cursor"]}
        assert walked == ids

        scripted = await client.get("/api/models", params={"provider": "scripted"})
        assert {m["provider"] for m in scripted.json()["data"]["models"]} == {"scripted"}

        one = (await client.get("/api/models/scripted:utilitarian")).json()["data"]
        assert one["id"] == "scripted:utilitarian" and one["active"] is True
        assert one["category"] == "synthetic"

        async with db.transaction() as conn:
            await update_model(conn, "scripted:utilitarian", active=False)
        active = (await client.get("/api/models", params={"limit": 500})).json()["data"]
        assert "scripted:utilitarian" not in [m["id"] for m in active["models"]]
        every = await client.get("/api/models", params={"limit": 500, "include_inactive": True})
        assert "scripted:utilitarian" in [m["id"] for m in every.json()["data"]["models"]]

        missing = await client.get("/api/models/openai:no-such-model")
        assert_error(missing, 404, "MODEL_NOT_FOUND")
        assert_error(await client.get("/api/models/not-an-id"), 422, "INVALID_INPUT")
        assert_error(await client.get("/api/models/openai:x%00y"), 422, "VALIDATION_ERROR")
        bad = await client.get("/api/models", params={"cursor": "e30"})
        assert_error(bad, 400, "INVALID_CURSOR")


async def test_check_applies_the_rule_of_run_creation(live: Any, assert_error: Any) -> None:
    async with live.client_for("default", "viewer") as client:
        fine = await client.post(
            "/api/models/check",
            json={"models": ["scripted:utilitarian", "scripted:deontologist"]},
        )
        assert fine.status_code == 200, fine.text
        data = fine.json()["data"]
        assert data["valid"] is True
        assert [m["model"] for m in data["models"]] == [
            "scripted:utilitarian",
            "scripted:deontologist",
        ]
        assert all(m["registered"] and m["entry"]["active"] for m in data["models"])

        unknown = await client.post(
            "/api/models/check",
            json={"models": ["openai:no-such-model", "nowhere:x", "scripted:utilitarian"]},
        )
        body = assert_error(unknown, 422, "UNKNOWN_MODEL")
        assert "openai:no-such-model" in body["error"] and "nowhere" in body["error"]
        assert "valuerank models" in body["hint"]

        allowed = await client.post(
            "/api/models/check", json={"models": ["openai:no-such-model"], "allow_unknown": True}
        )
        assert allowed.status_code == 200
        assert allowed.json()["data"]["models"] == [
            {"model": "openai:no-such-model", "registered": False, "entry": None}
        ]
        still = await client.post(
            "/api/models/check", json={"models": ["nowhere:x"], "allow_unknown": True}
        )
        assert_error(still, 422, "UNKNOWN_MODEL")  # an unknown provider is never allowed

        assert_error(
            await client.post("/api/models/check", json={"models": []}), 422, "VALIDATION_ERROR"
        )
        assert_error(
            await client.post("/api/models/check", json={"models": "scripted:utilitarian"}),
            422,
            "VALIDATION_ERROR",
        )
    async with live.client(token=None) as anonymous:
        assert_error(await anonymous.get("/api/models"), 401, "UNAUTHORIZED")


async def test_admins_of_the_install_register_and_change_models(
    live: Any, assert_error: Any
) -> None:
    async with live.client() as admin:
        added = await admin.put(
            "/api/models/openai:gpt-house-tuned",
            json={"display_name": "House tuned", "weight": 0.5, "input_price_per_mtok": 1.25},
        )
        assert added.status_code == 201, added.text
        entry = added.json()["data"]
        assert entry["id"] == "openai:gpt-house-tuned" and entry["display_name"] == "House tuned"
        assert entry["weight"] == 0.5 and entry["active"] is True
        assert entry["input_price_per_mtok"] == 1.25 and entry["output_price_per_mtok"] is None
        listed = (await admin.get("/api/models", params={"limit": 500})).json()["data"]
        ids = [m["id"] for m in listed["models"]]
        assert "openai:gpt-house-tuned" in ids and "scripted:utilitarian" in ids  # catalog kept

        again = await admin.put("/api/models/openai:gpt-house-tuned", json={"weight": 2})
        assert again.status_code == 200 and again.json()["data"]["weight"] == 2.0
        assert again.json()["data"]["display_name"] == "House tuned"  # left out: kept

        changed = await admin.patch(
            "/api/models/scripted:contrarian",
            json={"active": False, "output_price_per_mtok": None, "category": "test"},
        )
        assert changed.status_code == 200, changed.text
        shown = (await admin.get("/api/models/scripted:contrarian")).json()["data"]
        assert shown["active"] is False and shown["category"] == "test"
        assert shown["output_price_per_mtok"] is None
        # An inactive model is refused by run creation's check.
        refused = await admin.post("/api/models/check", json={"models": ["scripted:contrarian"]})
        assert_error(refused, 422, "UNKNOWN_MODEL")

        missing = await admin.patch("/api/models/openai:not-registered", json={"weight": 1})
        assert_error(missing, 404, "MODEL_NOT_FOUND")
        body = assert_error(
            await admin.patch("/api/models/scripted:utilitarian", json={}), 422, "INVALID_INPUT"
        )
        assert "nothing to change" in body["error"]
        body = assert_error(
            await admin.patch("/api/models/scripted:utilitarian", json={"weight": None}),
            422,
            "INVALID_INPUT",
        )
        assert "weight" in body["error"]
        for bad in ({"weight": -1}, {"weight": "heavy"}, {"colour": "red"}, {"active": "yes"}):
            response = await admin.patch("/api/models/scripted:utilitarian", json=bad)
            assert_error(response, 422, "VALIDATION_ERROR")
        body = assert_error(
            await admin.put("/api/models/nowhere:thing", json={}), 422, "INVALID_INPUT"
        )
        assert "unknown provider" in body["error"]
        assert_error(await admin.put("/api/models/no-colon", json={}), 422, "INVALID_INPUT")
        untouched = (await admin.get("/api/models/scripted:utilitarian")).json()["data"]
        assert untouched["weight"] == 1.0 and untouched["active"] is True

    # The registry is every organisation's: a member of the default organisation, or the
    # admin of another one, may read it but not change it.
    for org, role in (("default", "member"), ("tenant", "admin")):
        async with live.client_for(org, role) as other:
            for response in (
                await other.patch("/api/models/scripted:utilitarian", json={"weight": 9}),
                await other.put("/api/models/openai:theirs", json={}),
            ):
                assert_error(response, 403, "FORBIDDEN")
            assert (await other.get("/api/models/scripted:utilitarian")).status_code == 200
    async with live.client() as admin:
        untouched = (await admin.get("/api/models/scripted:utilitarian")).json()["data"]
        assert untouched["weight"] == 1.0
        assert_error(await admin.get("/api/models/openai:theirs"), 404, "MODEL_NOT_FOUND")
