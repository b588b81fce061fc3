"""`valuerank export …`: runs, definitions and the whole workspace as the CLI's files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape

from valuerank.cli.common import (
    JsonOption,
    atomic_output,
    console,
    database,
    local_or_server,
    print_json,
    run,
    session,
    write_atomically,
)
from valuerank.client import ApiClient, ApiError
from valuerank.client import exchange as remote
from valuerank.client.api import segment, with_query
from valuerank.errors import ValueRankError
from valuerank.exchange import export_definition, write_run_zip, write_workspace
from valuerank.exchange.manifest import export_run_id
from valuerank.exchange.naming import safe_part
from valuerank.exchange.run_data import load_run
from valuerank.formats.run_table import COLUMNS_HEADER

if TYPE_CHECKING:
    from valuerank.exchange.table_files import TableFormat

WORKSPACE_FILE = "valuerank-workspace.zip"

app = typer.Typer(
    help="Export runs, definitions and the workspace as the original CLI's files (ZIP/.md),"
    " and a run as a table (CSV, JSON Lines, Parquet).",
    no_args_is_help=True,
)

OutputOption = typer.Option(
    None, "--output", "-o", help="File to write (default: a name in the current folder)."
)


def _save(
    server: ApiClient, path: str, output: Path | None, default: str
) -> tuple[Path, remote.Saved]:
    """The export the server sends for `path`, streamed into `output` (default: the
    server's name for it, else `default`) atomically, as the local path writes it."""
    chosen: list[Path] = []

    def _open(name: str | None) -> Any:
        chosen.append(output or Path(name or default))
        return atomic_output(chosen[0])

    try:
        saved = remote.save_download(server, path, _open)
    except ValueRankError as exc:  # the user's file (OUTPUT_NOT_WRITTEN): shown as the server's
        raise ApiError(exc.message, code=exc.code, hint=exc.hint) from None
    return chosen[0], saved


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
    run. With VALUERANK_API_URL set, the server sends the ZIP."""

    async def _go() -> tuple[Path, int, dict[str, object]]:
        # One read-only transaction: a consistent snapshot, and on SQLite no write lock
        # held against the workers while a large run is written out.
        async with database() as opened, opened.db.transaction() as conn:
            snapshot = await load_run(conn, opened.org_id, run_id)
            path = output or Path(f"run-{safe_part(export_run_id(snapshot))}.zip")
            with atomic_output(path) as out:
                written = await write_run_zip(conn, opened.org_id, snapshot, out)
        facts = {"id": written.db_id, "cli_run_id": written.run_id}
        return path, path.stat().st_size, {**facts, "transcripts": written.transcripts}

    def _remote(server: ApiClient) -> tuple[Path, int, dict[str, object]]:
        path, saved = _save(server, f"/api/export/run/{segment(run_id)}", output, "run.zip")
        facts = {
            "id": saved.header(remote.RUN_ID_HEADER),
            "cli_run_id": saved.header(remote.CLI_RUN_ID_HEADER),
            "transcripts": int(saved.header(remote.TRANSCRIPTS_HEADER)),
        }
        return path, saved.size, facts

    path, size, facts = local_or_server(_go, _remote, as_json=as_json)
    _done(as_json, path, size, **facts)


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
    """A definition version as the CLI's .md (or, with --with-ancestry, a lineage ZIP).
    With VALUERANK_API_URL set, the server sends it."""

    async def _go() -> tuple[Path, int, str]:
        async with session() as s:
            exported = await export_definition(
                s.conn, s.org_id, definition_id, with_ancestry=with_ancestry
            )
        path = output or Path(exported.file_name)
        write_atomically(path, exported.data)
        return path, len(exported.data), exported.media_type

    def _remote(server: ApiClient) -> tuple[Path, int, str]:
        where = with_query(
            f"/api/export/definition/{segment(definition_id)}",
            with_ancestry=with_ancestry or None,
        )
        path, saved = _save(server, where, output, "definition.md")
        return path, saved.size, saved.media_type

    path, size, media_type = local_or_server(_go, _remote, as_json=as_json)
    _done(as_json, path, size, media_type=media_type)


@app.command("workspace")
def workspace(output: Path | None = OutputOption, as_json: bool = JsonOption) -> None:
    """Every definition, rubric and run of the workspace as one ZIP (runs streamed). With
    VALUERANK_API_URL set, the server sends it."""

    async def _go() -> tuple[Path, int]:
        path = output or Path(WORKSPACE_FILE)
        async with database() as opened, opened.db.transaction() as conn:
            with atomic_output(path) as out:
                await write_workspace(conn, opened.org_id, out)
        return path, path.stat().st_size

    def _remote(server: ApiClient) -> tuple[Path, int]:
        path, saved = _save(server, "/api/export/workspace", output, WORKSPACE_FILE)
        return path, saved.size

    path, size = local_or_server(_go, _remote, as_json=as_json)
    _done(as_json, path, size, format="valuerank-workspace")


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
    the columns are those of the Python API's `run.decisions_df()` (docs/notebooks.md).
    With VALUERANK_API_URL set, the server sends it."""

    fmt = run(_format(output), as_json=as_json)

    async def _go() -> tuple[Path, int, dict[str, object]]:
        from valuerank.exchange.run_table import run_table, table_rows
        from valuerank.exchange.table_files import write_table

        async with database() as opened, opened.db.transaction() as conn:
            snapshot = await load_run(conn, opened.org_id, run_id)
            path = output or Path(f"run-{safe_part(snapshot.id)}.csv")
            found = await run_table(conn, opened.org_id, snapshot, with_text=with_text)
            columns = found.layout.columns()
            with atomic_output(path) as out:
                written = await write_table(
                    out, fmt, columns, table_rows(conn, opened.org_id, found)
                )
        facts = {"id": snapshot.id, "format": fmt, "rows": written.rows}
        return path, path.stat().st_size, {**facts, "columns": written.columns}

    def _remote(server: ApiClient) -> tuple[Path, int, dict[str, object]]:
        where = with_query(
            f"/api/export/table/{segment(run_id)}", format=fmt, with_text=with_text or None
        )
        path, saved = _save(server, where, output, f"run.{fmt}")
        facts = {
            "id": saved.header(remote.RUN_ID_HEADER),
            "format": fmt,
            "rows": int(saved.header(remote.ROWS_HEADER)),
            "columns": len(json.loads(saved.header(COLUMNS_HEADER))),
        }
        return path, saved.size, facts

    path, size, facts = local_or_server(_go, _remote, as_json=as_json)
    _done(as_json, path, size, **facts)


async def _format(output: Path | None) -> TableFormat:
    """The table format the output's extension asks for (csv by default), in `run`: an
    unknown extension is a clear exit 1 before anything is asked."""
    from valuerank.exchange.table_files import format_of

    return format_of(output) if output is not None else "csv"
