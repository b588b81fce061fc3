"""`valuerank import …`: CLI runs (a run ZIP, a run folder, a folder of transcripts)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from valuerank.cli.common import (
    JsonOption,
    console,
    local_or_server,
    print_json,
    read_bytes,
    run,
    session,
)
from valuerank.client import ApiClient
from valuerank.client import exchange as remote
from valuerank.exchange import Limits, import_runs, import_workspace
from valuerank.exchange.archive_safety import MiB, SourceTree
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


def _runs_table(results: list[dict[str, Any]]) -> Table:
    table = Table("id", "cli run id", "name", "transcripts", "result")
    table.columns[0].no_wrap = True
    for r in results:
        result = "imported" if r["created"] else "[dim]already imported: nothing written[/]"
        table.add_row(
            short_id(r["id"]),
            escape(r["cli_run_id"]),
            escape(r["name"]),
            str(r["transcripts"]),
            result,
        )
    return table


def _read(path: Path, limits: Limits, *, as_json: bool, workspace: bool = False) -> SourceTree:
    """The files of `path` an import uses, read and checked here (the user's limits, unsafe
    archives, a workspace that is not one) before anything is sent: the server gets them
    as one ZIP."""
    from valuerank.exchange.importing import read_import, read_workspace

    async def _go() -> SourceTree:
        return (read_workspace if workspace else read_import)(path, limits)

    return run(_go(), as_json=as_json)


def _upload(server: ApiClient, tree: SourceTree) -> dict[str, Any]:
    name = Path(tree.label).name
    filename = name if name.lower().endswith(".zip") else f"{name or 'import'}.zip"
    return remote.upload_import(server, remote.zip_files(tree.files), filename=filename)


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
    not imported again. A workspace ZIP is restored whole (see `import workspace`). With
    VALUERANK_API_URL set, the files are read and checked here and uploaded to the server.
    """
    limits = _limits(max_total_mb, max_file_mb, max_files)

    async def _local() -> list[dict[str, Any]]:
        async with session() as s:
            return [r.to_dict() for r in await import_runs(s.conn, s.org_id, path, limits=limits)]

    def _remote(server: ApiClient) -> list[dict[str, Any]]:
        runs: list[dict[str, Any]] = _upload(server, _read(path, limits, as_json=as_json))["runs"]
        return runs

    results = local_or_server(_local, _remote, as_json=as_json)
    if as_json:
        print_json({"runs": results})
        return
    console.print(_runs_table(results))


@app.command("workspace")
def workspace(
    path: Path = typer.Argument(..., help="A workspace ZIP from `valuerank export workspace`."),
    max_total_mb: int = MaxTotalOption,
    max_file_mb: int = MaxFileOption,
    max_files: int = MaxFilesOption,
    as_json: bool = JsonOption,
) -> None:
    """Restore a workspace: its definition and rubric version trees (forks, labels, times),
    then its runs on those versions; all or nothing. Restoring it again writes nothing.
    With VALUERANK_API_URL set, the ZIP is checked here and uploaded to the server."""
    limits = _limits(max_total_mb, max_file_mb, max_files)

    async def _local() -> dict[str, Any]:
        async with session() as s:
            return (await import_workspace(s.conn, s.org_id, path, limits=limits)).to_dict()

    def _remote(server: ApiClient) -> dict[str, Any]:
        answer = _upload(server, _read(path, limits, as_json=as_json, workspace=True))
        return {k: answer[k] for k in ("definitions", "rubrics", "reused_versions", "runs")}

    restored = local_or_server(_local, _remote, as_json=as_json)
    if as_json:
        print_json(restored)
        return
    console.print(
        f"restored {restored['definitions']} definition and {restored['rubrics']} rubric "
        f"versions ({restored['reused_versions']} already there)"
    )
    console.print(_runs_table(restored["runs"]))


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
    column or a bad row writes nothing and names the row. With VALUERANK_API_URL set, the
    file is uploaded to the server."""

    async def _read() -> bytes:
        return read_bytes(path)

    data = run(_read(), as_json=as_json)

    async def _local() -> dict[str, Any]:
        from valuerank.exchange.table_import import import_table

        async with session() as s:
            imported = await import_table(
                s.conn, s.org_id, data, file_name=str(path), name=name, preamble=preamble
            )
        return imported.to_dict()

    imported = local_or_server(
        _local,
        lambda server: remote.upload_table(
            server, data, filename=path.name, name=name, preamble=preamble
        ),
        as_json=as_json,
    )
    if as_json:
        print_json(imported)
        return
    what = "imported" if imported["created"] else "already imported: nothing written"
    console.print(
        f"{escape(imported['name'])} {escape(imported['version_label'])} "
        f"({short_id(imported['id'])}): {imported['scenarios']} fixed scenarios, {what}"
    )
    console.print(f"run it: valuerank runs create --definition {short_id(imported['id'])}")
