"""`valuerank export …`: runs, definitions and the whole workspace as the CLI's files."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from valuerank.cli.common import (
    JsonOption,
    atomic_output,
    console,
    database,
    print_json,
    run,
    session,
    write_atomically,
)
from valuerank.exchange import export_definition, write_run_zip, write_workspace
from valuerank.exchange.manifest import export_run_id
from valuerank.exchange.naming import safe_part
from valuerank.exchange.run_data import load_run

app = typer.Typer(
    help="Export runs, definitions and the workspace as the original CLI's files (ZIP/.md),"
    " and a run as a table (CSV, JSON Lines, Parquet).",
    no_args_is_help=True,
)

OutputOption = typer.Option(
    None, "--output", "-o", help="File to write (default: a name in the current folder)."
)


def _done(as_json: bool, path: Path, size: int, **facts: object) -> None:
    if as_json:
        print_json({"file": str(path), "bytes": size, **facts})
    else:
        details = ", ".join(f"{k}: {v}" for k, v in facts.items())
        # soft_wrap: a long path stays on one line, whole, to copy (not broken at the width)
        console.print(
            f"wrote [bold]{escape(str(path))}[/] ({size} bytes; {escape(details)})", soft_wrap=True
        )


@app.command("run")
def run_(
    run_id: str = typer.Argument(..., help="Run id (or a unique prefix of it)."),
    output: Path | None = OutputOption,
    as_json: bool = JsonOption,
) -> None:
    """A run as a ZIP: run_manifest.yaml, scenarios/, transcripts/, summary.csv, results.jsonl.

    The transcripts are streamed into the file: the memory it takes does not grow with the
    run."""

    async def _go() -> None:
        # One read-only transaction: a consistent snapshot, and on SQLite no write lock
        # held against the workers while a large run is written out.
        async with database() as opened, opened.db.transaction() as conn:
            snapshot = await load_run(conn, opened.org_id, run_id)
            path = output or Path(f"run-{safe_part(export_run_id(snapshot))}.zip")
            with atomic_output(path) as out:
                written = await write_run_zip(conn, opened.org_id, snapshot, out)
        _done(
            as_json,
            path,
            path.stat().st_size,
            id=written.db_id,
            cli_run_id=written.run_id,
            transcripts=written.transcripts,
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
        _done(as_json, path, len(exported.data), media_type=exported.media_type)

    run(_go(), as_json=as_json)


@app.command("workspace")
def workspace(output: Path | None = OutputOption, as_json: bool = JsonOption) -> None:
    """Every definition, rubric and run of the workspace as one ZIP (runs streamed)."""

    async def _go() -> None:
        path = output or Path("valuerank-workspace.zip")
        async with database() as opened, opened.db.transaction() as conn:
            with atomic_output(path) as out:
                await write_workspace(conn, opened.org_id, out)
        _done(as_json, path, path.stat().st_size, format="valuerank-workspace")

    run(_go(), as_json=as_json)


@app.command("table")
def table(
    run_id: str = typer.Argument(..., help="Run id (or a unique prefix of it)."),
    output: Path | None = typer.Option(
        None,
        "--output",
        "-o",
        help="File to write: .csv, .jsonl or .parquet (default: run-<id>.csv).",
    ),
    with_text: bool = typer.Option(
        False, "--with-text", help="Add each transcript's first answer, turns and rationale."
    ),
    as_json: bool = JsonOption,
) -> None:
    """A run as one table, a row per transcript: model, scenario, levels, phrasing, scale
    order, decision, refusal, each judge's values, tokens, cost, latency.

    The format follows the file's extension (.parquet needs `pip install 'valuerank[data]'`);
    the columns are those of the Python API's `run.decisions_df()` (docs/notebooks.md)."""
    from valuerank.exchange.run_table import run_table, table_rows
    from valuerank.exchange.table_files import format_of, write_table

    async def _go() -> None:
        fmt = format_of(output) if output is not None else "csv"
        async with database() as opened, opened.db.transaction() as conn:
            snapshot = await load_run(conn, opened.org_id, run_id)
            path = output or Path(f"run-{safe_part(snapshot.id)}.csv")
            found = await run_table(conn, opened.org_id, snapshot, with_text=with_text)
            columns = found.layout.columns()
            with atomic_output(path) as out:
                written = await write_table(
                    out, fmt, columns, table_rows(conn, opened.org_id, found)
                )
        _done(
            as_json,
            path,
            path.stat().st_size,
            id=snapshot.id,
            format=fmt,
            rows=written.rows,
            columns=written.columns,
        )

    run(_go(), as_json=as_json)
