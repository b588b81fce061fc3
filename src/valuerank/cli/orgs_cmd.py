"""`valuerank orgs …`: the organisations of this install (the operator's view of all of them)."""

from __future__ import annotations

from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from valuerank.cli.common import JsonOption, console, local_or_server, print_json, run, session
from valuerank.client import ApiClient
from valuerank.client import accounts as remote
from valuerank.orgs import create_org, list_orgs

app = typer.Typer(help="Organisations: create, list, defaults for new runs.", no_args_is_help=True)


@app.command("create")
def create(
    name: str = typer.Argument(..., help="Display name, e.g. 'Acme Research'."),
    slug: str | None = typer.Option(
        None, "--slug", help="How commands name it (default: from the name, e.g. acme-research)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Create an organisation; then add its first admin with `valuerank users create`.

    Works on the database only, never through a server: an organisation without members
    is the install's to make (over the API a signed-in user founds one and becomes its
    admin: POST /api/orgs)."""

    async def _go() -> dict[str, Any]:
        async with session(local_only=True) as s:
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
    """Every organisation with its number of members.

    With VALUERANK_API_URL set, the server there answers: the organisations its token's
    user belongs to (a token: its own), with the role held, not the member counts."""

    async def _go() -> list[dict[str, Any]]:
        async with session() as s:
            return [org.to_dict() for org in await list_orgs(s.conn)]

    data = local_or_server(_go, lambda server: server.get("/api/orgs")["orgs"], as_json=as_json)
    if as_json:
        print_json(data)
        return
    # A server answers the caller's organisations with their role instead of member counts.
    counted = all("members" in org for org in data)
    table = Table("slug", "name", "members" if counted else "role", "id", "created")
    for org in data:
        third = str(org["members"]) if counted else org.get("role", "-")
        table.add_row(org["slug"], org["name"], third, org["id"], org["created_at"][:10])
    console.print(table)


@app.command("defaults")
def defaults(
    judge: list[str] = typer.Option(
        [], "--judge", help="Default judge `provider:model`; repeat for several (replaces them)."
    ),
    summary_model: str | None = typer.Option(
        None, "--summary-model", help="Default model writing rationales and the run's summary."
    ),
    clear_judges: bool = typer.Option(False, "--clear-judges", help="No default judges."),
    clear_summary_model: bool = typer.Option(
        False, "--clear-summary-model", help="No default summary model."
    ),
    allow_unknown_model: bool = typer.Option(
        False, "--allow-unknown-model", help="Use models the registry does not know."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Show, or set, the judges and summary model of runs created without naming any.

    Without options it shows them. A run created without --judge gets the default judges
    (and says so); `runs create --no-default-judges` opts out.

    With VALUERANK_API_URL set, the server there answers (changing them: an admin)."""
    from valuerank.org_defaults import OrgDefaults, get_org_defaults, set_org_defaults
    from valuerank.shapes import dump

    change = bool(judge) or summary_model is not None or clear_judges or clear_summary_model

    async def _go() -> dict[str, Any]:
        async with session() as s:
            current = await get_org_defaults(s.conn, s.org_id)
            if change:
                judges = () if clear_judges else tuple(judge) or current.judge_models
                summary = None if clear_summary_model else summary_model or current.summary_model
                current = await set_org_defaults(
                    s.conn,
                    s.org_id,
                    OrgDefaults(judges, summary),
                    allow_unknown=allow_unknown_model,
                )
        return dump(current)  # type: ignore[no-any-return]

    def _remote(server: ApiClient) -> dict[str, Any]:
        if not change:
            data: dict[str, Any] = server.get("/api/orgs/defaults")
            return data
        return remote.set_defaults(
            server,
            judges=list(judge),
            summary_model=summary_model,
            clear_judges=clear_judges,
            clear_summary_model=clear_summary_model,
            allow_unknown=allow_unknown_model,
        )

    data = local_or_server(_go, _remote, as_json=as_json)
    if as_json:
        print_json(data)
        return
    judges = ", ".join(data["judges"]) or "none (runs without --judge have no judges)"
    console.print(f"default judges: {escape(judges)}", highlight=False, soft_wrap=True)
    console.print(
        f"default summary model: {escape(data['summary_model'] or 'none')}", highlight=False
    )
