"""`valuerank export …`: runs, definitions and the whole workspace as the CLI's files."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from valuerank.cli.common import (
    JsonOption,
    console,
    print_json,
    run,
    session,
    write_atomically,
)
from valuerank.exchange import export_definition, export_workspace, run_folder, zip_run_folder
from valuerank.exchange.naming import safe_part

app = typer.Typer(
    help="Export runs, definitions and the workspace as the original CLI's files (ZIP/.md).",
    no_args_is_help=True,
)

OutputOption = typer.Option(
    None, "--output", "-o", help="File to write (default: a name in the current folder)."
)


def _done(as_json: bool, path: Path, data: bytes, **facts: object) -> None:
    if as_json:
        print_json({"file": str(path), "bytes": len(data), **facts})
    else:
        details = ", ".join(f"{k}: {v}" for k, v in facts.items())
        console.print(f"wrote [bold]{escape(str(path))}[/] ({len(data)} bytes; {escape(details)})")


@app.command("run")
def run_(
    run_id: str = typer.Argument(..., help="Run id (or a unique prefix of it)."),
    output: Path | None = OutputOption,
    as_json: bool = JsonOption,
) -> None:
    """A run as a ZIP: run_manifest.yaml, scenarios/, transcripts/, summary.csv, results.jsonl."""

    async def _go() -> None:
        async with session() as s:
            folder = await run_folder(s.conn, s.org_id, run_id)
        data = zip_run_folder(folder)
        path = output or Path(f"run-{safe_part(folder.run_id)}.zip")
        write_atomically(path, data)
        _done(
            as_json,
            path,
            data,
            id=folder.db_id,
            cli_run_id=folder.run_id,
            transcripts=folder.transcript_count,
        )

    run(_go(), as_json=as_json)


@app.command("definition")
def definition(
    definition_id: str = typer.Argument(..., help="Definition version id (or a unique prefix)."),
    with_ancestry: bool = typer.Option(
        False,
        "--with-ancestry",
        help="A ZIP of every version from the root to this one, with lineage.yaml.",
    ),
    output: Path | None = OutputOption,
    as_json: bool = JsonOption,
) -> None:
    """A definition version as the CLI's .md (or, with --with-ancestry, a lineage ZIP)."""

    async def _go() -> None:
        async with session() as s:
            exported = await export_definition(
                s.conn, s.org_id, definition_id, with_ancestry=with_ancestry
            )
        path = output or Path(exported.file_name)
        write_atomically(path, exported.data)
        _done(as_json, path, exported.data, media_type=exported.media_type)

    run(_go(), as_json=as_json)


@app.command("workspace")
def workspace(output: Path | None = OutputOption, as_json: bool = JsonOption) -> None:
    """Every definition, rubric and run of the workspace as one ZIP."""

    async def _go() -> None:
        async with session() as s:
            data = await export_workspace(s.conn, s.org_id)
        path = output or Path("valuerank-workspace.zip")
        write_atomically(path, data)
        _done(as_json, path, data, format="valuerank-workspace")

    run(_go(), as_json=as_json)
