"""Adding an existing account to an organisation (issue 21): the admin only invites it, learns
nothing about it (the answer is the same as for a new email), and its user accepts or declines
at /api/invitations."""

from __future__ import annotations

from typing import Any

from valuerank.accounts import Role

from .conftest import Live

PRIVATE = ("has_password", "last_login_at", "id", "name")
ACCEPT = {"decision": "accept"}


async def test_an_existing_account_is_invited_not_added(live: Live, assert_error: Any) -> None:
    ada = await live.account("default", Role.VIEWER, email="ada@example.org")
    async with live.client_for("lab", Role.ADMIN) as lab, live.client(token=ada.token) as me:
        existing = await lab.post(
            "/api/users",
            json={"email": "Ada@Example.org", "role": "member", "password": "lab chose this 1"},
        )
        new = await lab.post("/api/users", json={"email": "New@Lab.test", "role": "member"})
        # The same answer whether the email has an account or not: nothing about Ada.
        assert existing.status_code == new.status_code == 202, existing.text
        assert existing.json()["data"] == {
            "email": "ada@example.org",
            "role": "member",
            "invited": True,
        }
        assert new.json()["data"] == {**existing.json()["data"], "email": "new@lab.test"}
        assert not any(key in existing.text for key in PRIVATE)
        for email in ("ada@example.org", "nobody@lab.test"):  # the policy is checked first
            short = {"email": email, "role": "viewer", "password": "short"}
            assert_error(await lab.post("/api/users", json=short), 422, "VALIDATION_ERROR")

        # Ada is not a member of the lab until she accepts; the lab sees her email only.
        members = (await lab.get("/api/users")).json()["data"]["users"]
        assert {m["email"] for m in members} == {lab.account.email, "new@lab.test"}  # type: ignore[attr-defined]
        assert_error(await lab.get(f"/api/users/{ada.user_id}"), 404, "NOT_FOUND")
        sent = (await lab.get("/api/users/invitations")).json()["data"]
        assert [(i["email"], i["role"]) for i in sent["invitations"]] == [
            ("ada@example.org", "member")
        ]
        assert not any(key in str(sent) for key in ("has_password", "last_login_at"))
        assert [o["slug"] for o in (await me.get("/api/orgs")).json()["data"]["orgs"]] == [
            "default"
        ]

        mine = (await me.get("/api/invitations")).json()["data"]["invitations"]
        assert [(i["org"]["slug"], i["role"]) for i in mine] == [("lab", "member")]
        invitation = mine[0]["id"]
        # Nobody else accepts it for her, not even the lab's admin.
        assert_error(
            await lab.post(f"/api/invitations/{invitation}", json=ACCEPT), 404, "NOT_FOUND"
        )
        accepted = await me.post(f"/api/invitations/{invitation}", json=ACCEPT)
        assert accepted.status_code == 200, accepted.text
        assert accepted.json()["data"]["slug"] == "lab"
        assert accepted.json()["data"]["role"] == "member"
        assert (await me.get("/api/invitations")).json()["data"]["invitations"] == []
        again = await me.post(f"/api/invitations/{invitation}", json=ACCEPT)
        assert_error(again, 404, "NOT_FOUND")

        joined = (await lab.get(f"/api/users/{ada.user_id}")).json()["data"]
        assert joined["role"] == "member"
        assert joined["has_password"] is False  # the lab's password was not set on her account
        assert (await lab.get("/api/users/invitations")).json()["data"]["invitations"] == []
        assert_error(  # a member now: adding her again says so, as for any member
            await lab.post("/api/users", json={"email": "ada@example.org", "role": "viewer"}),
            409,
            "MEMBER_EXISTS",
        )


async def test_invitations_are_declined_or_withdrawn(live: Live, assert_error: Any) -> None:
    bob = await live.account("default", Role.MEMBER, email="bob@example.org")
    async with (
        live.client_for("lab", Role.ADMIN) as lab,
        live.client_for("elsewhere", Role.ADMIN) as outsider,
        live.client(token=bob.token) as me,
    ):
        invite = {"email": "bob@example.org", "role": "viewer"}
        assert (await lab.post("/api/users", json=invite)).status_code == 202
        # Inviting again changes the role offered; it is still one invitation.
        assert (await lab.post("/api/users", json={**invite, "role": "admin"})).status_code == 202
        (pending,) = (await me.get("/api/invitations")).json()["data"]["invitations"]
        assert pending["role"] == "admin"
        declined = await me.post(f"/api/invitations/{pending['id']}", json={"decision": "decline"})
        assert declined.status_code == 200 and declined.json()["data"]["declined"] is True
        assert (await lab.get("/api/users/invitations")).json()["data"]["invitations"] == []
        assert [o["slug"] for o in (await me.get("/api/orgs")).json()["data"]["orgs"]] == [
            "default"
        ]

        assert (await lab.post("/api/users", json=invite)).status_code == 202
        (sent,) = (await lab.get("/api/users/invitations")).json()["data"]["invitations"]
        # Another organisation's admin cannot see or take back the lab's invitation.
        assert (await outsider.get("/api/users/invitations")).json()["data"]["invitations"] == []
        assert_error(
            await outsider.delete(f"/api/users/invitations/{sent['id']}"), 404, "NOT_FOUND"
        )
        withdrawn = await lab.delete(f"/api/users/invitations/{sent['id']}")
        assert withdrawn.status_code == 200 and withdrawn.json()["data"]["withdrawn"] is True
        assert (await me.get("/api/invitations")).json()["data"]["invitations"] == []
        assert_error(await me.post(f"/api/invitations/{sent['id']}", json=ACCEPT), 404, "NOT_FOUND")
    async with live.client_for("default", Role.VIEWER) as viewer:  # admins only
        assert_error(await viewer.get("/api/users/invitations"), 403, "FORBIDDEN")
