"""`valuerank tokens …`: API tokens. A token acts as its user in one organisation with the
role the user holds there; it is printed once, by `create`, and stored only as a hash."""

from __future__ import annotations

from typing import Any

import typer
from rich.markup import escape
from rich.table import Column, Table

from valuerank.accounts import (
    choose_org,
    create_token,
    find_user,
    list_tokens,
    revoke_token,
)
from valuerank.cli.common import (
    JsonOption,
    console,
    err_console,
    local_or_server,
    print_json,
    session,
)
from valuerank.client import accounts as remote
from valuerank.client.api import segment
from valuerank.orgs import get_org, org_id_for

app = typer.Typer(help="API tokens: create (shown once), list, revoke.", no_args_is_help=True)


def _when(value: str | None) -> str:
    return "-" if value is None else value[:16].replace("T", " ")


@app.command("create")
def create(
    user: str = typer.Option(..., "--user", help="Email of the user the token acts as."),
    org: str | None = typer.Option(
        None,
        "--org",
        help="Organisation slug or id (default: the user's only one, or VALUERANK_DEFAULT_ORG).",
    ),
    name: str = typer.Option("", "--name", help="What the token is for, e.g. 'ci'."),
    expires_days: float | None = typer.Option(
        None, "--expires-days", min=0.001, help="Expire after this many days (default: never)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Create an API token for USER; it is shown this once (`{"token": …}` with --json).

    Send it as `Authorization: Bearer <token>`, or open http://HOST:PORT/?token=<token> once
    in a browser to get a session.

    With VALUERANK_API_URL set, the server there creates it, for a member of its token's
    organisation (another member's: an admin).
    """

    async def _go() -> dict[str, Any]:
        async with session() as s:
            account = await find_user(s.conn, user)
            default_id = await org_id_for(s.conn, s.settings.default_org)
            org_id = await choose_org(s.conn, account.id, org, default_id)
            new = await create_token(
                s.conn, org_id, account.id, name=name, expires_in_days=expires_days
            )
            slug = (await get_org(s.conn, org_id)).slug
        return {**new.to_dict(), "org": slug}

    data = local_or_server(
        _go,
        lambda server: remote.create_token(server, user, org, name, expires_days),
        as_json=as_json,
    )
    if as_json:
        print_json(data)
        return
    console.print(data["token"], highlight=False, soft_wrap=True)
    err_console.print(
        f"[dim]token {escape(data['id'])} of {escape(data['user_email'])} in "
        f"{escape(data['org'])}: shown once, store it now. Send `Authorization: Bearer "
        "<token>`, or open /?token=<token> once in a browser.[/]",
        highlight=False,
        soft_wrap=True,
    )


@app.command("list")
def list_(
    user: str | None = typer.Option(None, "--user", help="Only this user's tokens."),
    org: str | None = typer.Option(None, "--org", help="Only this organisation's tokens."),
    as_json: bool = JsonOption,
) -> None:
    """Tokens, newest first: id, prefix, name, user, organisation, status, dates (never the
    token itself).

    With VALUERANK_API_URL set, the server there answers: its token's organisation's tokens
    (an admin sees every member's, others their own)."""

    async def _go() -> list[dict[str, Any]]:
        async with session() as s:
            user_id = (await find_user(s.conn, user)).id if user else None
            org_id = (await get_org(s.conn, org)).id if org else None
            tokens = await list_tokens(s.conn, org_id, user_id=user_id)
        return [t.to_dict() for t in tokens]

    data = local_or_server(
        _go, lambda server: remote.list_tokens(server, user, org), as_json=as_json
    )
    if as_json:
        print_json(data)
        return
    if not data:
        console.print("no tokens: create one with `valuerank tokens create --user EMAIL`")
        return
    table = Table(
        Column("id", overflow="fold"),  # whole, to copy into `tokens revoke`
        Column("prefix", no_wrap=True),
        "name",
        "user",
        "status",
        "created",
        "last used",
        "expires",
    )
    for t in data:
        table.add_row(
            t["id"],
            t["prefix"] + "…",
            t["name"] or "-",
            t["user_email"],
            t["status"],
            _when(t["created_at"]),
            _when(t["last_used_at"]),
            _when(t["expires_at"]),
        )
    console.print(table)


@app.command("revoke")
def revoke(
    token_id: str = typer.Argument(..., metavar="ID", help="Token id (or a unique prefix)."),
    as_json: bool = JsonOption,
) -> None:
    """Revoke a token at once (requests with it, and sessions opened from it, are refused).

    With VALUERANK_API_URL set, the server there revokes it (one of its token's
    organisation; another member's: an admin)."""

    async def _go() -> dict[str, Any]:
        async with session() as s:
            return (await revoke_token(s.conn, None, token_id)).to_dict()

    data: dict[str, Any] = local_or_server(
        _go, lambda server: server.delete(f"/api/tokens/{segment(token_id)}"), as_json=as_json
    )
    if as_json:
        print_json(data)
        return
    console.print(
        f"revoked token [bold]{escape(data['id'])}[/] ({escape(data['prefix'])}…) of "
        f"{escape(data['user_email'])}",
        highlight=False,
        soft_wrap=True,
    )
