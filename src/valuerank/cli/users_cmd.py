"""`valuerank users …`: users and their roles in organisations.

A password is never a command-line argument (shell history, `ps`): `--password-stdin` reads
the first line of standard input, `--password-prompt` asks twice at a hidden prompt. Without
either the user has no password and signs in with API tokens (`valuerank tokens create`).
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.accounts import (
    Member,
    Role,
    add_member,
    find_user,
    list_members,
    list_users,
    remove_member,
    set_password,
    set_role,
)
from valuerank.accounts.invitations import my_invitations, org_invitations
from valuerank.accounts.passwords import MIN_PASSWORD_LENGTH
from valuerank.cli.common import (
    JsonOption,
    console,
    fail,
    local_or_server,
    print_json,
    run,
    session,
)
from valuerank.client import ApiClient
from valuerank.client import accounts as remote
from valuerank.orgs import get_org

app = typer.Typer(
    help="Users and their roles per organisation: create, list, set-role, remove, invitations, "
    "set-password.",
    no_args_is_help=True,
)

OrgOption = typer.Option(
    None, "--org", help="Organisation slug or id (default: VALUERANK_DEFAULT_ORG)."
)
RoleOption = typer.Option(..., "--role", help="admin, member or viewer.", case_sensitive=False)
PasswordStdin = typer.Option(
    False, "--password-stdin", help="Read the password from the first line of standard input."
)
PasswordPrompt = typer.Option(
    False, "--password-prompt", help="Ask for the password at a hidden prompt (twice)."
)


def _read_password(stdin: bool, prompt: bool, as_json: bool) -> str | None:
    if stdin and prompt:
        fail(
            "use either --password-stdin or --password-prompt, not both",
            code="INVALID_INPUT",
            as_json=as_json,
        )
    if stdin:
        return sys.stdin.readline().rstrip("\r\n")
    if prompt:
        value = typer.prompt(
            f"Password ({MIN_PASSWORD_LENGTH}+ characters)",
            hide_input=True,
            confirmation_prompt=True,
        )
        return str(value)
    return None


def _say(text: str) -> None:
    console.print(text, highlight=False, soft_wrap=True)


@app.command("create")
def create(
    email: str = typer.Argument(..., help="The user's email (their name to sign in)."),
    org: str | None = OrgOption,
    role: Role = RoleOption,
    name: str = typer.Option("", "--name", help="Display name."),
    password_stdin: bool = PasswordStdin,
    password_prompt: bool = PasswordPrompt,
    as_json: bool = JsonOption,
) -> None:
    """Add EMAIL to an organisation with a role, creating the user if the email is new.

    An existing user keeps their password; a new one gets the password given (12+
    characters), or none (API tokens only).

    Works on the database only, never through a server: it makes accounts (the install's
    first admin among them) and adds existing ones without asking them; over the API an
    admin invites (POST /api/users) and the user accepts.
    """
    password = _read_password(password_stdin, password_prompt, as_json)

    async def _go() -> dict[str, Any]:
        async with session(local_only=True) as s:
            target = await get_org(s.conn, org or s.settings.default_org)
            member = await add_member(s.conn, target.id, email, role, name=name, password=password)
        return {**member.to_dict(), "org": target.slug}

    data = run(_go(), as_json=as_json)
    if as_json:
        print_json(data)
        return
    _say(
        f"[bold]{escape(data['email'])}[/] is {data['role']} of {escape(data['org'])}"
        + ("" if data["has_password"] else " (no password: sign in with an API token)")
    )
    _say(
        f"[dim]an API token: valuerank tokens create --user {escape(data['email'])} "
        f"--org {escape(data['org'])}[/]"
    )


@app.command("list")
def list_(
    org: str | None = typer.Option(None, "--org", help="Only this organisation's members."),
    as_json: bool = JsonOption,
) -> None:
    """Users with their roles: every user of the install, or one organisation's members.

    With VALUERANK_API_URL set, the server there answers: its token's organisation's
    members (a server shows no other organisation's users)."""

    async def _go() -> list[dict[str, Any]]:
        async with session() as s:
            if org is not None:
                target = await get_org(s.conn, org)
                members = await list_members(s.conn, target.id)
                return [{**m.to_dict(), "org": target.slug} for m in members]
            return [
                {**user.to_dict(), "orgs": [{"org": slug, "role": r.value} for slug, r in roles]}
                for user, roles in await list_users(s.conn)
            ]

    data = local_or_server(_go, lambda server: remote.list_members(server, org), as_json=as_json)
    if as_json:
        print_json(data)
        return
    if not data:
        _say("no users: create one with `valuerank users create EMAIL --org ORG --role admin`")
        return
    table = Table("email", "name", "roles", "password", "last login", "id")
    for item in data:
        roles = (
            f"{item['org']}: {item['role']}"
            if "role" in item
            else ", ".join(f"{o['org']}: {o['role']}" for o in item["orgs"]) or "-"
        )
        last = (item["last_login_at"] or "-")[:16].replace("T", " ")
        password = "yes" if item["has_password"] else "-"
        table.add_row(item["email"], item["name"] or "-", roles, password, last, item["id"])
    console.print(table)


def _change_member(
    email: str,
    org: str | None,
    change: Callable[[AsyncConnection, str, str], Awaitable[Member]],
    remote_change: Callable[[ApiClient], dict[str, Any]],
    as_json: bool,
) -> dict[str, Any]:
    """Apply `change(conn, org_id, user_id)` to EMAIL's membership of ORG; its result."""

    async def _go() -> dict[str, Any]:
        async with session() as s:
            target = await get_org(s.conn, org or s.settings.default_org)
            user = await find_user(s.conn, email)
            member = await change(s.conn, target.id, user.id)
        return {**member.to_dict(), "org": target.slug}

    data = local_or_server(_go, remote_change, as_json=as_json)
    if as_json:
        print_json(data)
    return data


@app.command("set-role")
def set_role_(
    email: str = typer.Argument(...),
    org: str | None = OrgOption,
    role: Role = RoleOption,
    as_json: bool = JsonOption,
) -> None:
    """Change a member's role (their tokens act with it from their next request).

    With VALUERANK_API_URL set, the server there changes it (an admin of its token's
    organisation)."""

    async def change(conn: AsyncConnection, org_id: str, user_id: str) -> Member:
        return await set_role(conn, org_id, user_id, role)

    data = _change_member(
        email,
        org,
        change,
        lambda server: remote.set_role(server, email, org, role.value),
        as_json,
    )
    if not as_json:
        _say(f"[bold]{escape(data['email'])}[/] is now {data['role']} of {escape(data['org'])}")


@app.command("remove")
def remove(
    email: str = typer.Argument(...),
    org: str | None = OrgOption,
    as_json: bool = JsonOption,
) -> None:
    """Remove a member from an organisation; their tokens and sessions there are revoked.
    (`--json` answers the membership removed.)

    With VALUERANK_API_URL set, the server there removes them (an admin of its token's
    organisation)."""
    data = _change_member(
        email,
        org,
        remove_member,
        lambda server: remote.remove_member(server, email, org),
        as_json,
    )
    if not as_json:
        _say(f"removed [bold]{escape(data['email'])}[/] from {escape(data['org'])}")


@app.command("invitations")
def invitations(
    org: str | None = OrgOption,
    user: str | None = typer.Option(None, "--user", help="Those this email received instead."),
    as_json: bool = JsonOption,
) -> None:
    """Pending invitations: those an organisation sent (its admins invite existing accounts
    over the API), or those a user received (they accept at POST /api/invitations/{id}).

    With VALUERANK_API_URL set, the server there answers: its token's organisation's (an
    admin), or with --user the caller's own."""

    async def _go() -> list[dict[str, Any]]:
        async with session() as s:
            if user is not None:
                pending = await my_invitations(s.conn, (await find_user(s.conn, user)).id)
            else:
                target = await get_org(s.conn, org or s.settings.default_org)
                pending = await org_invitations(s.conn, target.id)
        return [i.to_dict() for i in pending]

    data = local_or_server(
        _go, lambda server: remote.invitations(server, org, user), as_json=as_json
    )
    if as_json:
        print_json(data)
        return
    if not data:
        _say("no pending invitations")
        return
    table = Table("email", "organisation", "role", "invited", "id")
    for item in data:
        when = (item["invited_at"] or "-")[:16].replace("T", " ")
        table.add_row(item["email"], item["org"]["slug"], item["role"], when, item["id"])
    console.print(table)


@app.command("set-password")
def set_password_(
    email: str = typer.Argument(...),
    password_stdin: bool = PasswordStdin,
    password_prompt: bool = PasswordPrompt,
    as_json: bool = JsonOption,
) -> None:
    """Set a user's password (their browser sessions end; API tokens keep working).

    Works on the database only, never through a server: the API lets no one set a user's
    password (an operator of the install does it here)."""
    password = _read_password(password_stdin, password_prompt or not password_stdin, as_json)
    assert password is not None

    async def _go() -> dict[str, Any]:
        async with session(local_only=True) as s:
            user = await find_user(s.conn, email)
            await set_password(s.conn, user.id, password)
        return {"email": user.email, "id": user.id, "password_set": True}

    data = run(_go(), as_json=as_json)
    if as_json:
        print_json(data)
        return
    _say(f"password set for [bold]{escape(data['email'])}[/]")
