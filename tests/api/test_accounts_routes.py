"""/api/orgs, /api/users, /api/tokens and /api/credentials on a real server: roles decide who
may change what, another organisation's objects are 404, secrets are shown once or never."""

from __future__ import annotations

from typing import Any

import pytest
from cryptography.fernet import Fernet
from fastapi.routing import APIRoute, iter_route_contexts

from valuerank.accounts import Role
from valuerank.api.deps import Principal  # noqa: F401  (the contract the routes receive)

from .conftest import Live

sqlite_only = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


def _required_role(route: APIRoute) -> Role | None:
    """The role a route's `Viewer`/`Member`/`Admin` dependency asks for."""
    pending = list(route.dependant.dependencies)
    while pending:
        dependant = pending.pop()
        role = getattr(dependant.call, "required_role", None)
        if role is not None:
            return Role(role)
        pending.extend(dependant.dependencies)
    return None


@sqlite_only
async def test_every_route_refuses_a_weaker_role(live: Live, assert_error: Any) -> None:
    """Every HTTP route of the app that needs a role answers 403 FORBIDDEN to each weaker one
    (viewers cannot write, members cannot administer) — whatever route is added later."""
    weaker = {
        Role.VIEWER: [],
        Role.MEMBER: [Role.VIEWER],
        Role.ADMIN: [Role.VIEWER, Role.MEMBER],
    }
    clients = {role: await live.account("default", role) for role in Role}
    checked = 0
    # FastAPI includes routers lazily: iter_route_contexts gives each route with its full path.
    for context in iter_route_contexts(live.app.routes):
        route = context.original_route
        if not isinstance(route, APIRoute):
            continue
        needed = _required_role(route)
        if needed is None:
            continue
        path = str(context.path_format).replace("{", "").replace("}", "")  # any id will do
        for method in sorted(set(context.methods or ()) - {"HEAD"}):
            for role in weaker[needed]:
                async with live.client(token=clients[role].token) as client:
                    response = await client.request(method, path, json={})
                error = assert_error(response, 403, "FORBIDDEN")
                assert needed.value in error["error"], (method, path)
                checked += 1
    # The account routes alone have: POST /api/orgs, POST/PATCH/DELETE /api/users,
    # PUT/DELETE /api/credentials, each refused to a viewer and a member.
    assert checked >= 12


async def test_members_and_roles(live: Live, assert_error: Any) -> None:
    async with live.client() as admin:
        added = await admin.post(
            "/api/users",
            json={"email": "Bob@Example.org", "role": "viewer", "name": "Bob"},
        )
        assert added.status_code == 202, added.text
        assert added.json()["data"] == {
            "email": "bob@example.org",
            "role": "viewer",
            "invited": True,
        }
        # A new email is a member at once (an existing account would only be invited).
        listed = (await admin.get("/api/users")).json()["data"]["users"]
        (bob,) = [u for u in listed if u["email"] == "bob@example.org"]
        assert bob["role"] == "viewer" and not bob["has_password"]
        again = await admin.post("/api/users", json={"email": "bob@example.org", "role": "admin"})
        assert_error(again, 409, "MEMBER_EXISTS")
        assert_error(
            await admin.post("/api/users", json={"email": "x@y.z", "role": "owner"}),
            422,
            "VALIDATION_ERROR",
        )
        assert_error(
            await admin.post("/api/users", json={"email": "x@y.z", "role": "viewer", "extra": 1}),
            422,
            "VALIDATION_ERROR",
        )
        short = await admin.post(
            "/api/users", json={"email": "c@y.z", "role": "viewer", "password": "short"}
        )
        assert_error(short, 422, "VALIDATION_ERROR")  # the schema's minLength (issue 21)

        first = await admin.get("/api/users", params={"limit": 1})
        page = first.json()["data"]
        assert page["count"] == 1 and page["users"][0]["email"] == "admin@example.test"
        second = await admin.get("/api/users", params={"limit": 1, "cursor": page["next_cursor"]})
        assert [u["email"] for u in second.json()["data"]["users"]] == ["bob@example.org"]
        assert second.json()["data"]["next_cursor"] is None
        assert_error(
            await admin.get("/api/users", params={"cursor": "garbage!"}), 400, "INVALID_CURSOR"
        )

        promoted = await admin.patch(f"/api/users/{bob['id']}", json={"role": "member"})
        assert promoted.json()["data"]["role"] == "member"
        me = (await admin.get("/api/auth/me")).json()["data"]["user"]["id"]
        # The last admin stays.
        assert_error(
            await admin.patch(f"/api/users/{me}", json={"role": "viewer"}), 409, "LAST_ADMIN"
        )
        assert_error(await admin.delete(f"/api/users/{me}"), 409, "LAST_ADMIN")
        removed = await admin.delete(f"/api/users/{bob['id']}")
        assert removed.json()["data"]["removed"] is True
        assert_error(await admin.get(f"/api/users/{bob['id']}"), 404, "NOT_FOUND")


async def test_tokens_are_shown_once_and_managed_by_their_owner_or_an_admin(
    live: Live, assert_error: Any
) -> None:
    member = await live.account("default", Role.MEMBER)
    viewer = await live.account("default", Role.VIEWER)
    async with live.client(token=member.token) as m, live.client(token=viewer.token) as v:
        made = await m.post("/api/tokens", json={"name": "ci", "expires_in_days": 30})
        assert made.status_code == 201 and made.headers["cache-control"] == "no-store"
        new = made.json()["data"]
        assert new["token"].startswith(new["prefix"]) and new["status"] == "active"
        assert new["expires_at"] and new["user_email"] == member.email
        listed = (await m.get("/api/tokens")).json()["data"]
        assert {t["name"] for t in listed["tokens"]} == {"ci", "tests"}
        assert "token" not in listed["tokens"][0] and new["token"] not in str(listed)
        # A viewer may hold tokens too, but not see or touch a member's.
        assert (await v.post("/api/tokens", json={})).status_code == 201
        assert_error(await v.get("/api/tokens", params={"user_id": member.user_id}),
                     403, "FORBIDDEN")  # fmt: skip
        assert_error(await v.delete(f"/api/tokens/{new['id']}"), 404, "NOT_FOUND")
        assert_error(
            await m.post("/api/tokens", json={"user_id": viewer.user_id}), 403, "FORBIDDEN"
        )
        assert_error(
            await m.post("/api/tokens", json={"expires_in_days": 0}), 422, "VALIDATION_ERROR"
        )
        async with live.client(token=new["token"]) as ci:
            assert (await ci.get("/api/auth/me")).json()["data"]["user"]["email"] == member.email
            assert (await ci.delete(f"/api/tokens/{new['id']}")).status_code == 200  # itself
            assert_error(await ci.get("/api/auth/me"), 401, "UNAUTHORIZED")
    async with live.client() as admin:
        everyone = (await admin.get("/api/tokens")).json()["data"]["tokens"]
        assert {t["user_email"] for t in everyone} >= {member.email, viewer.email}
        only = (await admin.get("/api/tokens", params={"user_id": viewer.user_id})).json()
        assert {t["user_email"] for t in only["data"]["tokens"]} == {viewer.email}
        for_viewer = await admin.post("/api/tokens", json={"user_id": viewer.user_id})
        assert for_viewer.json()["data"]["user_email"] == viewer.email
        assert_error(
            await admin.post("/api/tokens", json={"user_id": "no-such-user"}), 404, "NOT_FOUND"
        )


async def test_another_organisation_sees_404(live: Live, assert_error: Any, make_run: Any) -> None:
    run = await make_run(live.org_id)
    mine = await live.account("default", Role.VIEWER)
    async with live.client_for("other-lab", Role.ADMIN) as outsider:
        assert outsider.account.org_slug == "other-lab"  # type: ignore[attr-defined]
        assert_error(await outsider.get(f"/api/runs/{run.id}"), 404, "NOT_FOUND")
        assert_error(await outsider.get(f"/api/runs/{run.id}/events"), 404, "NOT_FOUND")
        assert (await outsider.get("/api/runs")).json()["data"]["runs"] == []
        assert_error(await outsider.get(f"/api/users/{mine.user_id}"), 404, "NOT_FOUND")
        assert_error(
            await outsider.patch(f"/api/users/{mine.user_id}", json={"role": "admin"}),
            404,
            "NOT_FOUND",
        )
        assert_error(await outsider.delete(f"/api/users/{mine.user_id}"), 404, "NOT_FOUND")
        async with live.client(token=mine.token) as insider:
            (token,) = (await insider.get("/api/tokens")).json()["data"]["tokens"]
        assert_error(await outsider.delete(f"/api/tokens/{token['id']}"), 404, "NOT_FOUND")
        assert_error(  # an id in the query is looked up like one in the path
            await outsider.get("/api/tokens", params={"user_id": mine.user_id}), 404, "NOT_FOUND"
        )
        assert_error(
            await outsider.post("/api/tokens", json={"user_id": mine.user_id}), 404, "NOT_FOUND"
        )
        emails = {u["email"] for u in (await outsider.get("/api/users")).json()["data"]["users"]}
        assert mine.email not in emails and "admin@example.test" not in emails
        orgs = (await outsider.get("/api/orgs")).json()["data"]["orgs"]
        assert [o["slug"] for o in orgs] == ["other-lab"]
    async with live.client(token=mine.token) as insider:
        assert (await insider.get(f"/api/runs/{run.id}")).status_code == 200


async def test_organisations(live: Live, assert_error: Any) -> None:
    async with live.client() as admin:
        made = await admin.post("/api/orgs", json={"name": "Acme Research"})
        assert made.status_code == 201, made.text
        assert made.json()["data"]["slug"] == "acme-research"
        assert made.json()["data"]["role"] == "admin"
        assert_error(await admin.post("/api/orgs", json={"name": "Acme research"}),
                     409, "CONFLICT")  # fmt: skip
        assert_error(await admin.post("/api/orgs", json={"name": "x", "slug": "Bad Slug"}),
                     422, "VALIDATION_ERROR")  # fmt: skip
        # The admin's token still acts in its own organisation only.
        listed = (await admin.get("/api/orgs")).json()["data"]["orgs"]
        assert [o["slug"] for o in listed] == ["default"]


async def test_credentials_are_masked_and_never_returned(
    live: Live, assert_error: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VALUERANK_SECRET_KEY", Fernet.generate_key().decode())
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-operator-key-0123456789")
    from valuerank.config import get_settings

    get_settings.cache_clear()
    key = "sk-test-organisation-key-abcdefgh9876"
    try:
        async with live.client() as admin, live.client_for("default", Role.MEMBER) as member:
            assert_error(
                await member.put("/api/credentials/openai", json={"api_key": key}),
                403,
                "FORBIDDEN",
            )
            stored = await admin.put("/api/credentials/OpenAI", json={"api_key": key})
            assert stored.status_code == 200, stored.text
            assert stored.json()["data"]["hint"] == "••••9876" and key not in stored.text
            listed = await member.get("/api/credentials")
            items = {c["provider"]: c for c in listed.json()["data"]["credentials"]}
            assert items["openai"]["hint"] == "••••9876" and items["openai"]["source"] == "stored"
            # The operator's environment key: its presence only, no characters of it.
            assert items["anthropic"] == {**items["anthropic"], "hint": "••••"}
            assert key not in listed.text and "6789" not in listed.text
            assert_error(
                await admin.put("/api/credentials/nope", json={"api_key": key}),
                422,
                "INVALID_INPUT",
            )
            assert_error(
                await admin.put("/api/credentials/openai", json={"api_key": 5}),
                422,
                "VALIDATION_ERROR",
            )
            async with live.client_for("elsewhere", Role.ADMIN) as outsider:
                assert_error(await outsider.delete("/api/credentials/openai"), 404, "NOT_FOUND")
                theirs = (await outsider.get("/api/credentials")).json()["data"]["credentials"]
                assert "openai" not in {c["provider"] for c in theirs}
            deleted = await admin.delete("/api/credentials/openai")
            assert deleted.json()["data"] == {"provider": "openai", "deleted": True}
    finally:
        get_settings.cache_clear()
