"""`valuerank orgs|users|tokens` on both databases: the operator's commands over the accounts
services, `--json` everywhere, the token printed once and then only by prefix. The `cli_both`
tests also ask a live server, which answers for its token's organisation only; the commands
that administer the install itself (orgs create, users create, users set-password) work on
the database even with a server set, and say so."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest
from tests.api.conftest import ADMIN_EMAIL

from valuerank.accounts import Role, add_member, authenticate_token
from valuerank.client import API_TOKEN_ENV, API_URL_ENV
from valuerank.config import get_settings
from valuerank.db import Database, create_database
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


@pytest.fixture
async def bob(db: Database, org_id: str) -> str:
    """A viewer of the default organisation."""
    async with db.transaction() as conn:
        await add_member(conn, org_id, "bob@example.org", Role.VIEWER, name="Bob")
    return "bob@example.org"


def test_members_and_tokens_both_ways(cli_both: Invoke, bob: str, database_url: Any) -> None:
    members = cli_both("users", "list", "--org", "default", "--json")
    assert members.exit_code == 0, members.stdout + members.stderr
    [found] = [m for m in members.json() if m["email"] == bob]
    assert (found["role"], found["org"], found["name"]) == ("viewer", "default", "Bob")
    assert "Bob" in cli_both("users", "list", "--org", "default").stdout
    promoted = cli_both("users", "set-role", bob, "--role", "member", "--json")
    assert promoted.exit_code == 0, promoted.stdout + promoted.stderr
    assert (promoted.json()["role"], promoted.json()["org"]) == ("member", "default")

    created = cli_both("tokens", "create", "--user", bob, "--name", "ci", "--json")
    assert created.exit_code == 0, created.stdout + created.stderr
    token = created.json()["token"]
    assert created.json()["org"] == "default" and created.json()["user_email"] == bob
    identity = _identity(database_url, token)
    assert identity is not None and identity.role.value == "member"
    plain = cli_both("tokens", "create", "--user", bob)
    (printed,) = plain.stdout.split()  # the token alone on stdout, the advice on stderr
    assert printed.startswith("vrt_") and "shown once" in plain.stderr
    nobody = cli_both("tokens", "create", "--user", "nobody@example.org", "--json")
    assert nobody.exit_code == 1 and nobody.json()["code"] == "NOT_FOUND"

    mine = cli_both("tokens", "list", "--user", bob, "--json")
    assert mine.exit_code == 0, mine.stdout + mine.stderr
    assert sorted(t["name"] for t in mine.json()) == ["", "ci"]
    assert token not in mine.stdout and printed not in mine.stdout
    table = cli_both("tokens", "list", "--user", bob)
    assert token[:12] in table.stdout and token not in table.stdout
    revoked = cli_both("tokens", "revoke", short_id(created.json()["id"]), "--json")
    assert revoked.exit_code == 0, revoked.stdout + revoked.stderr
    assert revoked.json()["status"] == "revoked" and _identity(database_url, token) is None
    assert cli_both("tokens", "revoke", "no-such", "--json").json()["code"] == "NOT_FOUND"

    assert cli_both("users", "invitations", "--json").json() == []
    removed = cli_both("users", "remove", bob, "--json")
    assert removed.exit_code == 0, removed.stdout + removed.stderr
    assert (removed.json()["email"], removed.json()["org"]) == (bob, "default")
    assert _identity(database_url, printed) is None  # its membership is gone
    assert "default" in [o["slug"] for o in cli_both("orgs", "list", "--json").json()]
    assert "default" in cli_both("orgs", "list").stdout


def test_org_defaults_both_ways(cli_both: Invoke) -> None:
    shown = cli_both("orgs", "defaults", "--json")
    assert shown.exit_code == 0, shown.stdout + shown.stderr
    assert shown.json()["judges"] == [] and shown.json()["summary_model"] is None
    judge = "scripted:centrist"
    changed = cli_both("orgs", "defaults", "--judge", judge, "--allow-unknown-model", "--json")
    assert changed.exit_code == 0, changed.stdout + changed.stderr
    assert changed.json()["judges"] == [judge]
    again = cli_both(
        "orgs", "defaults", "--summary-model", judge, "--allow-unknown-model", "--json"
    ).json()
    assert (again["judges"], again["summary_model"]) == ([judge], judge)  # judges kept
    cleared = cli_both("orgs", "defaults", "--clear-judges", "--clear-summary-model")
    assert cleared.exit_code == 0 and "default judges: none" in cleared.stdout


def test_a_server_answers_for_its_tokens_organisation_only(cli_both: Invoke, bob: str) -> None:
    out = cli_both("users", "list", "--org", "elsewhere", "--json")
    assert out.exit_code == 1
    if os.environ.get(API_URL_ENV):
        assert out.json()["code"] == "WRONG_ORGANISATION" and "default" in out.json()["error"]
    else:
        assert out.json()["code"] == "NOT_FOUND"  # no such organisation in the database
    theirs = cli_both("users", "invitations", "--user", bob, "--json")
    if os.environ.get(API_URL_ENV):  # a server shows only its caller's own invitations
        assert theirs.exit_code == 1 and theirs.json()["code"] == "FORBIDDEN"
        own = cli_both("users", "invitations", "--user", ADMIN_EMAIL, "--json")
        assert own.exit_code == 0 and own.json() == [], own.stdout
    else:
        assert theirs.exit_code == 0 and theirs.json() == []


def test_install_administration_works_on_the_database_even_with_a_server_set(
    cli: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(API_URL_ENV, "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv(API_TOKEN_ENV, "vrt_unused")
    get_settings.cache_clear()
    for args, stdin in (
        (("orgs", "create", "Lab"), None),
        (("users", "create", "eve@example.org", "--org", "lab", "--role", "admin"), None),
        (("users", "set-password", "eve@example.org", "--password-stdin"), PASSWORD + "\n"),
    ):
        out = cli(*args, "--json", input=stdin)
        assert out.exit_code == 0, out.stdout + out.stderr
        assert f"`valuerank {' '.join(args[:2])}` works on the database" in out.stderr
    assert out.json()["password_set"] is True and PASSWORD not in out.stdout + out.stderr
