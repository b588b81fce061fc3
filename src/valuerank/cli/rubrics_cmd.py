"""`valuerank rubrics …`: values rubrics, stored as versions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from valuerank import rubrics as service
from valuerank.cli.common import (
    JsonOption,
    console,
    err_console,
    local_or_server,
    print_json,
    read_text,
    run,
    session,
)
from valuerank.cli.definitions_cmd import when
from valuerank.client import definitions as remote
from valuerank.formats import parse_rubric
from valuerank.refs import short_id

app = typer.Typer(help="Values rubrics (values_rubric.yaml), versioned.", no_args_is_help=True)


@app.command("import")
def import_(
    file: Path = typer.Argument(..., help="A values rubric YAML file."),
    name: str | None = typer.Option(None, "--name", help="Rubric name (default: file name)."),
    as_json: bool = JsonOption,
) -> None:
    """Store a values rubric; a rubric of the same name gets a new version. With
    VALUERANK_API_URL set, the file is uploaded to the server."""

    async def _read() -> tuple[str, list[str]]:
        text = read_text(file)
        _, found = parse_rubric(text, source=str(file))  # fail before storing anything
        return text, [w.render(str(file)) for w in found]

    text, warnings = run(_read(), as_json=as_json)
    chosen = name or file.stem

    async def _local() -> dict[str, Any]:
        async with session() as s:
            result = await service.import_rubric(
                s.conn, s.org_id, text, name=chosen, source_file=file.name
            )
        return {**service.rubric_summary(result.version), "created": result.created}

    v = local_or_server(
        _local,
        lambda server: remote.import_rubric(server, text, name=chosen, filename=file.name),
        as_json=as_json,
    )
    if as_json:
        print_json(
            {
                **{k: v[k] for k in ("id", "name", "version_label", "created", "values")},
                "warnings": warnings,
            }
        )
        return
    for warning in warnings:
        err_console.print(f"[yellow]{warning}[/]", highlight=False)
    verb = "imported" if v["created"] else "already stored (same content):"
    console.print(
        f"{verb} rubric [bold]{v['name']}[/] [cyan]{v['version_label']}[/] [dim]{v['id']}[/] "
        f"with {len(v['values'])} values"
    )


@app.command("list")
def list_(as_json: bool = JsonOption) -> None:
    """List every rubric version. With VALUERANK_API_URL set, the server answers."""

    async def _local() -> list[dict[str, Any]]:
        async with session() as s:
            return [service.rubric_summary(v) for v in await service.list_rubrics(s.conn, s.org_id)]

    items = local_or_server(
        _local, lambda server: remote.every_page(server, "/api/rubrics", "rubrics"), as_json=as_json
    )
    if as_json:
        print_json(items)
        return
    table = Table("id", "name", "version", "values", "created")
    for v in items:
        table.add_row(
            short_id(v["id"]),
            v["name"],
            v["version_label"],
            str(len(v["values"])),
            when(v["created_at"]),
        )
    console.print(table)


@app.command("show")
def show(
    ref: str = typer.Argument(..., help="Rubric version id (or a unique prefix)."),
    as_json: bool = JsonOption,
) -> None:
    """Show a rubric version's values. With VALUERANK_API_URL set, the server answers."""

    async def _local() -> dict[str, Any]:
        async with session() as s:
            v = await service.get_rubric(s.conn, s.org_id, ref)
        return {**service.rubric_summary(v), "source_file": v.source_file, "content": v.content}

    v = local_or_server(_local, lambda server: remote.rubric(server, ref), as_json=as_json)
    if as_json:
        print_json(v)
        return
    console.print(f"[bold]{v['name']}[/] [cyan]{v['version_label']}[/] [dim]{v['id']}[/]")
    table = Table("value", "definition")
    for value_name, value in v["content"].get("values", {}).items():
        table.add_row(value_name, str((value or {}).get("definition", "")))
    console.print(table)
