"""`valuerank orgs|users|tokens` on both databases: the operator's commands over the accounts
services, `--json` everywhere, the token printed once and then only by prefix."""

from __future__ import annotations

import asyncio
from typing import Any

from valuerank.accounts import authenticate_token
from valuerank.db import create_database
from valuerank.refs import short_id

from .conftest import Invoke

PASSWORD = "correct horse battery staple"


def _identity(database_url: Any, token: str) -> Any:
    """What the server would make of `token` (the commands run their own event loop)."""

    async def check() -> Any:
        db = create_database(database_url.url)
        try:
            return await authenticate_token(db, token)
        finally:
            await db.dispose()

    return asyncio.run(check())


def test_orgs_users_and_tokens(cli: Invoke, database_url: Any) -> None:
    made = cli("orgs", "create", "Acme Research", "--json")
    assert made.exit_code == 0, made.stderr
    assert made.json()["slug"] == "acme-research"
    dup = cli("orgs", "create", "acme research", "--json")
    assert dup.exit_code == 1 and dup.json()["code"] == "CONFLICT"
    assert cli("orgs", "create", "Lab", "--slug", "Bad Slug", "--json").json()["code"] == (
        "INVALID_INPUT"
    )

    ada = cli(
        "users", "create", "Ada@Example.org", "--org", "acme-research", "--role", "admin",
        "--name", "Ada", "--password-stdin", "--json", input=PASSWORD + "\n",
    )  # fmt: skip
    assert ada.exit_code == 0, ada.stdout + ada.stderr
    assert ada.json()["email"] == "ada@example.org" and ada.json()["has_password"] is True
    assert PASSWORD not in ada.stdout
    short = cli("users", "create", "x@example.org", "--role", "viewer", "--password-stdin",
                "--json", input="short\n")  # fmt: skip
    assert short.exit_code == 1 and short.json()["code"] == "INVALID_INPUT"
    bob = cli("users", "create", "bob@example.org", "--role", "viewer", "--json")
    assert bob.json()["org"] == "default" and bob.json()["has_password"] is False
    assert (
        cli("users", "create", "bob@example.org", "--role", "admin", "--json").json()["code"]
        == "MEMBER_EXISTS"
    )
    assert cli("users", "create", "bob@example.org", "--org", "acme-research",
               "--role", "member").exit_code == 0  # fmt: skip
    bad_role = cli("users", "create", "c@example.org", "--role", "owner")
    assert bad_role.exit_code != 0

    everyone = {u["email"]: u for u in cli("users", "list", "--json").json()}
    assert {o["org"]: o["role"] for o in everyone["bob@example.org"]["orgs"]} == {
        "acme-research": "member",
        "default": "viewer",
    }
    acme = cli("users", "list", "--org", "acme-research", "--json").json()
    assert [(m["email"], m["role"]) for m in acme] == [
        ("ada@example.org", "admin"),
        ("bob@example.org", "member"),
    ]
    last = cli("users", "set-role", "ada@example.org", "--org", "acme-research", "--role",
               "member", "--json")  # fmt: skip
    assert last.exit_code == 1 and last.json()["code"] == "LAST_ADMIN"
    promoted = cli("users", "set-role", "bob@example.org", "--org", "acme-research",
                   "--role", "admin", "--json")  # fmt: skip
    assert promoted.json()["role"] == "admin"

    # Bob belongs to two organisations: the token goes to the one asked for, else the
    # default one.
    created = cli("tokens", "create", "--user", "bob@example.org", "--org", "acme-research",
                  "--name", "ci", "--json")  # fmt: skip
    assert created.exit_code == 0, created.stderr
    token = created.json()["token"]
    assert token.startswith("vrt_") and created.json()["org"] == "acme-research"
    identity = _identity(database_url, token)
    assert identity is not None and identity.role.value == "admin"
    plain = cli("tokens", "create", "--user", "bob@example.org")
    assert plain.exit_code == 0
    (printed,) = plain.stdout.split()  # the token alone on stdout, the advice on stderr
    assert printed.startswith("vrt_") and "shown once" in plain.stderr
    identity = _identity(database_url, printed)
    assert identity is not None and identity.role.value == "viewer"
    nobody = cli("tokens", "create", "--user", "nobody@example.org", "--json")
    assert nobody.exit_code == 1 and nobody.json()["code"] == "NOT_FOUND"
    elsewhere = cli("tokens", "create", "--user", "ada@example.org", "--org", "default", "--json")
    assert elsewhere.json()["code"] == "NOT_FOUND"

    listed = cli("tokens", "list", "--json")
    assert len(listed.json()) == 2 and token not in listed.stdout and printed not in listed.stdout
    assert {t["prefix"] for t in listed.json()} == {token[:12], printed[:12]}
    mine = cli("tokens", "list", "--user", "bob@example.org", "--org", "acme-research", "--json")
    assert [t["name"] for t in mine.json()] == ["ci"]
    table = cli("tokens", "list")
    assert table.exit_code == 0 and token[:12] in table.stdout and token not in table.stdout

    revoked = cli("tokens", "revoke", short_id(created.json()["id"]), "--json")
    assert revoked.json()["status"] == "revoked"
    assert _identity(database_url, token) is None
    assert cli("tokens", "revoke", "no-such", "--json").json()["code"] == "NOT_FOUND"

    removed = cli("users", "remove", "bob@example.org", "--json")
    assert removed.json()["email"] == "bob@example.org" and removed.json()["org"] == "default"
    assert _identity(database_url, printed) is None  # its membership is gone

    assert cli("users", "set-password", "bob@example.org", "--password-stdin", "--json",
               input="a whole new passphrase\n").json()["password_set"] is True  # fmt: skip
    orgs = {o["slug"]: o["members"] for o in cli("orgs", "list", "--json").json()}
    assert orgs == {"acme-research": 2, "default": 0}
    assert "acme-research" in cli("orgs", "list").stdout


def test_help_reads_well(cli: Invoke) -> None:
    commands = {
        "orgs": ("create", "list"),
        "users": ("create", "list", "set-role", "remove", "set-password"),
        "tokens": ("create", "list", "revoke"),
    }
    for group, names in commands.items():
        out = cli(group, "--help")
        assert out.exit_code == 0 and all(name in out.stdout for name in names)
    assert "shown this once" in cli("tokens", "create", "--help").stdout
    assert "--password-stdin" in cli("users", "create", "--help").stdout


def test_pending_invitations_are_listed(cli: Invoke, database_url: Any) -> None:
    """`valuerank users invitations`: what an organisation sent, or what a user received."""
    assert cli("orgs", "create", "Lab").exit_code == 0
    assert cli("users", "create", "eve@example.org", "--role", "viewer").exit_code == 0
    assert (
        cli("users", "create", "lab-admin@example.org", "--org", "lab", "--role", "admin").exit_code
        == 0
    )

    async def lab_invites_eve() -> None:  # what POST /api/users does for an existing account
        from valuerank.accounts.invitations import invite
        from valuerank.orgs import get_org

        db = create_database(database_url.url)
        try:
            async with db.transaction() as conn:
                await invite(conn, (await get_org(conn, "lab")).id, "eve@example.org", "member")
        finally:
            await db.dispose()

    asyncio.run(lab_invites_eve())
    sent = cli("users", "invitations", "--org", "lab", "--json")
    assert sent.exit_code == 0, sent.stderr
    assert [(i["email"], i["org"]["slug"], i["role"]) for i in sent.json()] == [
        ("eve@example.org", "lab", "member")
    ]
    received = cli("users", "invitations", "--user", "eve@example.org", "--json").json()
    assert [i["id"] for i in received] == [i["id"] for i in sent.json()]
    assert cli("users", "invitations", "--json").json() == []  # the default org sent none
    # Not a member of the lab until she accepts.
    lab = cli("users", "list", "--org", "lab", "--json").json()
    assert [m["email"] for m in lab] == ["lab-admin@example.org"]
    table = cli("users", "invitations", "--org", "lab")
    assert "eve@example.org" in table.stdout and "member" in table.stdout
