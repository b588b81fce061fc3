"""`valuerank queue caps …`: concurrency caps over all workers, set and cleared by hand."""

from __future__ import annotations

from typing import Any

import typer
from rich.table import Table

from valuerank.cli.common import JsonOption, console, local_or_server, print_json, session
from valuerank.client import ApiClient, ApiError
from valuerank.client import admin as remote
from valuerank.orgs import get_org
from valuerank.queue.cap_controls import cap_rows, remove_concurrency_cap, set_concurrency_cap

app = typer.Typer(
    help="Concurrency caps: jobs running at once over all workers, per organisation, "
    "provider or model (0: no cap).",
    no_args_is_help=True,
)

GlobalOption = typer.Option(False, "--global", help="The cap over every job.")
OrgOption = typer.Option(None, "--org", help="One organisation's cap (slug or id).")
ProviderOption = typer.Option(None, "--provider", help="A provider's cap, e.g. openai.")
ModelOption = typer.Option(None, "--model", help="One model's cap, e.g. openai:gpt-4o.")


async def _org_id(conn: Any, org: str | None) -> str | None:
    return None if org is None else (await get_org(conn, org)).id


@app.command("set")
def set_command(
    max_running: int = typer.Argument(..., help="Jobs running at once; 0 removes the cap."),
    everything: bool = GlobalOption,
    org: str | None = OrgOption,
    provider: str | None = ProviderOption,
    model: str | None = ModelOption,
    as_json: bool = JsonOption,
) -> None:
    """Create or change one cap; `set 0 --org acme` lifts that organisation's cap. A cap set
    for an organisation is its own: the workers' default (ORG_CONCURRENCY) leaves it alone.

    With VALUERANK_API_URL set, the server there sets it (an admin of its default
    organisation)."""

    async def _go() -> dict[str, Any]:
        async with session() as s:
            return await set_concurrency_cap(
                s.conn,
                max_running,
                everything=everything,
                org_id=await _org_id(s.conn, org),
                provider=provider,
                model=model,
            )

    def _remote(server: ApiClient) -> dict[str, Any]:
        if max_running < 0:  # as locally: the route's own 422 would name its body's field
            raise ApiError("a cap cannot be negative", code="INVALID_INPUT", hint="0 means no cap")
        path = remote.cap_path(everything=everything, org=org, provider=provider, model=model)
        data: dict[str, Any] = server.put(path, {"max": max_running})
        return data

    data = local_or_server(_go, _remote, as_json=as_json)
    if as_json:
        print_json(data)
    elif data["max"] is None:
        console.print(f"cap {data['key']} removed (no cap)")
    else:
        console.print(f"cap {data['key']} set to {data['max']}")


@app.command("remove")
def remove_command(
    everything: bool = GlobalOption,
    org: str | None = OrgOption,
    provider: str | None = ProviderOption,
    model: str | None = ModelOption,
    as_json: bool = JsonOption,
) -> None:
    """Lift one cap (CAP_NOT_FOUND when there is none).

    With VALUERANK_API_URL set, the server there lifts it (an admin of its default
    organisation)."""

    async def _go() -> dict[str, Any]:
        async with session() as s:
            key = await remove_concurrency_cap(
                s.conn,
                everything=everything,
                org_id=await _org_id(s.conn, org),
                provider=provider,
                model=model,
            )
        return {"key": key, "removed": True}

    def _remote(server: ApiClient) -> dict[str, Any]:
        path = remote.cap_path(everything=everything, org=org, provider=provider, model=model)
        data: dict[str, Any] = server.delete(path)
        return data

    data = local_or_server(_go, _remote, as_json=as_json)
    if as_json:
        print_json(data)
    else:
        console.print(f"cap {data['key']} removed")


@app.command("list")
def list_command(as_json: bool = JsonOption) -> None:
    """Every cap: its slots in use and its maximum; `default` marks the organisation caps
    the workers' default made.

    With VALUERANK_API_URL set, the server there answers (an admin of its default
    organisation)."""

    async def _go() -> list[dict[str, Any]]:
        async with session() as s:
            return await cap_rows(s.conn)

    rows = local_or_server(
        _go, lambda server: server.get("/api/queue/caps")["caps"], as_json=as_json
    )
    if as_json:
        print_json(rows)
        return
    table = Table(title="Concurrency caps")
    for column in ("key", "in use", "max", "from"):
        table.add_column(column)
    for r in rows:
        table.add_row(
            r["key"], str(r["in_use"]), str(r["max"]), "default" if r["is_default"] else "set"
        )
    console.print(table)
