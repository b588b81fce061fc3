"""`valuerank orgs …`: the organisations of this install (the operator's view of all of them)."""

from __future__ import annotations

from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from valuerank.cli.common import JsonOption, console, print_json, run, session
from valuerank.orgs import create_org, list_orgs

app = typer.Typer(help="Organisations: create, list.", no_args_is_help=True)


@app.command("create")
def create(
    name: str = typer.Argument(..., help="Display name, e.g. 'Acme Research'."),
    slug: str | None = typer.Option(
        None, "--slug", help="How commands name it (default: from the name, e.g. acme-research)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Create an organisation; then add its first admin with `valuerank users create`."""

    async def _go() -> dict[str, Any]:
        async with session() as s:
            org = await create_org(s.conn, name, slug=slug)
        return org.to_dict()

    data = run(_go(), as_json=as_json)
    if as_json:
        print_json(data)
        return
    console.print(
        f"created organisation [bold]{escape(data['slug'])}[/] ({escape(data['name'])}); "
        f"add its first admin: valuerank users create EMAIL --org {escape(data['slug'])} "
        "--role admin",
        highlight=False,
        soft_wrap=True,
    )


@app.command("list")
def list_(as_json: bool = JsonOption) -> None:
    """Every organisation with its number of members."""

    async def _go() -> list[dict[str, Any]]:
        async with session() as s:
            return [org.to_dict() for org in await list_orgs(s.conn)]

    data = run(_go(), as_json=as_json)
    if as_json:
        print_json(data)
        return
    table = Table("slug", "name", "members", "id", "created")
    for org in data:
        table.add_row(
            org["slug"], org["name"], str(org["members"]), org["id"], org["created_at"][:10]
        )
    console.print(table)
