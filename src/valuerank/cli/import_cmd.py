"""`valuerank import …`: CLI runs (a run ZIP, a run folder, a folder of transcripts)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from valuerank.cli.common import JsonOption, console, print_json, read_bytes, run, session
from valuerank.exchange import Limits, import_runs, import_workspace
from valuerank.exchange.archive_safety import MiB
from valuerank.exchange.run_import import ImportedRun
from valuerank.refs import short_id

app = typer.Typer(
    help="Import the original CLI's files (run folders, transcripts, run ZIPs) and workspaces,"
    " and tables of dilemmas.",
    no_args_is_help=True,
)

_DEFAULTS = Limits()


@app.callback()
def main() -> None:
    """Import the original CLI's files."""


def _limits(max_total_mb: int, max_file_mb: int, max_files: int) -> Limits:
    return Limits(
        max_total_bytes=max_total_mb * MiB,
        max_entry_bytes=max_file_mb * MiB,
        max_entries=max_files,
    )


MaxTotalOption = typer.Option(
    _DEFAULTS.max_total_bytes // MiB, "--max-total-mb", min=1, help="Refuse more data."
)
MaxFileOption = typer.Option(
    _DEFAULTS.max_entry_bytes // MiB, "--max-file-mb", min=1, help="Refuse a larger file."
)
MaxFilesOption = typer.Option(
    _DEFAULTS.max_entries, "--max-files", min=1, help="Refuse more files."
)


def _runs_table(results: list[ImportedRun]) -> Table:
    table = Table("id", "cli run id", "name", "transcripts", "result")
    table.columns[0].no_wrap = True
    for r in results:
        result = "imported" if r.created else "[dim]already imported: nothing written[/]"
        table.add_row(
            short_id(r.id), escape(r.cli_run_id), escape(r.name), str(r.transcripts), result
        )
    return table


@app.command("run")
def run_(
    path: Path = typer.Argument(
        ..., help="A run ZIP, a CLI run folder, a folder of transcript.*.md files, or one file."
    ),
    max_total_mb: int = MaxTotalOption,
    max_file_mb: int = MaxFileOption,
    max_files: int = MaxFilesOption,
    as_json: bool = JsonOption,
) -> None:
    """Import every run found (one per CLI run id); all or nothing.

    A run imported before with the same run id and the same transcripts is reported and
    not imported again. A workspace ZIP is restored whole (see `import workspace`).
    """
    limits = _limits(max_total_mb, max_file_mb, max_files)

    async def _go() -> None:
        async with session() as s:
            results = await import_runs(s.conn, s.org_id, path, limits=limits)
        if as_json:
            print_json({"runs": [r.to_dict() for r in results]})
            return
        console.print(_runs_table(results))

    run(_go(), as_json=as_json)


@app.command("workspace")
def workspace(
    path: Path = typer.Argument(..., help="A workspace ZIP from `valuerank export workspace`."),
    max_total_mb: int = MaxTotalOption,
    max_file_mb: int = MaxFileOption,
    max_files: int = MaxFilesOption,
    as_json: bool = JsonOption,
) -> None:
    """Restore a workspace: its definition and rubric version trees (forks, labels, times),
    then its runs on those versions; all or nothing. Restoring it again writes nothing."""
    limits = _limits(max_total_mb, max_file_mb, max_files)

    async def _go() -> None:
        async with session() as s:
            restored = await import_workspace(s.conn, s.org_id, path, limits=limits)
        if as_json:
            print_json(restored.to_dict())
            return
        console.print(
            f"restored {restored.definitions} definition and {restored.rubrics} rubric "
            f"versions ({restored.reused_versions} already there)"
        )
        console.print(_runs_table(restored.runs))

    run(_go(), as_json=as_json)


@app.command("table")
def table(
    path: Path = typer.Argument(..., help="A table of dilemmas: .csv, .jsonl or .parquet."),
    name: str | None = typer.Option(
        None, "--name", help="The definition's name (default: the file's name)."
    ),
    preamble: str | None = typer.Option(
        None, "--preamble", help="What the models read before each dilemma (default: ours)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Import a table of dilemmas, a row per scenario, as a definition of fixed scenarios.

    Columns: `text`; `scale` (lines `5 - …` to `1 - …`) or `action_a` and `action_b`;
    optional `id` and `dim.<Name>` levels (docs/notebooks.md). All or nothing: a missing
    column or a bad row writes nothing and names the row."""
    from valuerank.exchange.table_import import import_table

    async def _go() -> None:
        data = read_bytes(path)
        async with session() as s:
            imported = await import_table(
                s.conn, s.org_id, data, file_name=str(path), name=name, preamble=preamble
            )
        if as_json:
            print_json(imported.to_dict())
            return
        stored = imported.stored
        what = "imported" if imported.created else "already imported: nothing written"
        console.print(
            f"{escape(stored.version.name)} {escape(stored.version.version_label)} "
            f"({short_id(stored.version.id)}): {imported.scenarios} fixed scenarios, {what}"
        )
        console.print(f"run it: valuerank runs create --definition {short_id(stored.version.id)}")

    run(_go(), as_json=as_json)
