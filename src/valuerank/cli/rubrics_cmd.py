"""`valuerank rubrics …`: values rubrics, stored as versions."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from valuerank import rubrics as service
from valuerank.cli.common import (
    JsonOption,
    console,
    err_console,
    print_json,
    read_text,
    run,
    session,
)
from valuerank.formats import parse_rubric
from valuerank.refs import short_id

app = typer.Typer(help="Values rubrics (values_rubric.yaml), versioned.", no_args_is_help=True)


@app.command("import")
def import_(
    file: Path = typer.Argument(..., help="A values rubric YAML file."),
    name: str | None = typer.Option(None, "--name", help="Rubric name (default: file name)."),
    as_json: bool = JsonOption,
) -> None:
    """Store a values rubric; a rubric of the same name gets a new version."""

    async def _go() -> None:
        text = read_text(file)
        parse_rubric(text, source=str(file))  # fail before touching the database
        async with session() as s:
            result = await service.import_rubric(
                s.conn, s.org_id, text, name=name or file.stem, source_file=file.name
            )
        v = result.version
        values = list(v.content.get("values", {}))
        warnings = [w.render(str(file)) for w in result.warnings]
        if as_json:
            print_json(
                {
                    "id": v.id,
                    "name": v.name,
                    "version_label": v.version_label,
                    "created": result.created,
                    "values": values,
                    "warnings": warnings,
                }
            )
            return
        for warning in warnings:
            err_console.print(f"[yellow]{warning}[/]", highlight=False)
        verb = "imported" if result.created else "already stored (same content):"
        console.print(
            f"{verb} rubric [bold]{v.name}[/] [cyan]{v.version_label}[/] [dim]{v.id}[/] "
            f"with {len(values)} values"
        )

    run(_go(), as_json=as_json)


@app.command("list")
def list_(as_json: bool = JsonOption) -> None:
    """List every rubric version."""

    async def _go() -> None:
        async with session() as s:
            items = await service.list_rubrics(s.conn, s.org_id)
        if as_json:
            print_json([v.summary() for v in items])
            return
        table = Table("id", "name", "version", "values", "created")
        for v in items:
            table.add_row(
                short_id(v.id),
                v.name,
                v.version_label,
                str(len(v.content.get("values", {}))),
                v.created_at.strftime("%Y-%m-%d %H:%M"),
            )
        console.print(table)

    run(_go(), as_json=as_json)


@app.command("show")
def show(
    ref: str = typer.Argument(..., help="Rubric version id (or a unique prefix)."),
    as_json: bool = JsonOption,
) -> None:
    """Show a rubric version's values."""

    async def _go() -> None:
        async with session() as s:
            v = await service.get_rubric(s.conn, s.org_id, ref)
        if as_json:
            print_json({**v.summary(), "content": v.content})
            return
        console.print(f"[bold]{v.name}[/] [cyan]{v.version_label}[/] [dim]{v.id}[/]")
        table = Table("value", "definition")
        for value_name, value in v.content.get("values", {}).items():
            table.add_row(value_name, str((value or {}).get("definition", "")))
        console.print(table)

    run(_go(), as_json=as_json)
