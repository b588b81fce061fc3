"""Exporting a whole workspace (one organisation) as one ZIP.

    workspace.yaml                       format, counts, and an index of the runs (folder, id,
                                         CLI run id, name, status, origin, created_at,
                                         definition id, rubric id)
    definitions/<tree>/<label>.md        every definition version (CLI `.md`), one folder per
                                         lineage tree: <tree> = <root name>-<root id, 8 chars>
    definitions/lineage.yaml             every version: file, id, name, label, parent id and
                                         label, root id, content hash, created_at
    rubrics/<tree>/<label>.yaml          every rubric version (the CLI's values_rubric.yaml form)
    rubrics/lineage.yaml                 as for definitions
    runs/<cli run id>/…                  every run, laid out as a run ZIP (exchange.run_export);
                                         a run id two runs share gets `-<run id, 8 chars>`

`valuerank import workspace WORKSPACE.zip` (see `workspace_import`) restores it: the
definition and rubric trees with their forks, labels and creation times, then every run
attached to its definition version. Each run folder also carries its definition and rubric,
so the CLI (and `valuerank import run`) can read a run folder on its own.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from datetime import datetime
from typing import IO, Any

from sqlalchemy import Table
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank import versioning
from valuerank.db.tables import definitions, rubrics
from valuerank.exchange.definition_export import definition_markdown, version_entry
from valuerank.exchange.manifest import export_run_id
from valuerank.exchange.naming import safe_part
from valuerank.exchange.run_data import RunSnapshot, load_run, org_run_ids
from valuerank.exchange.run_export import write_run
from valuerank.exchange.zip_write import ZipStream
from valuerank.formats import Rubric, serialize_rubric
from valuerank.formats.yaml_io import dump_cli
from valuerank.queue.dialect import as_utc
from valuerank.refs import short_id

FORMAT = "valuerank-workspace"
FORMAT_VERSION = 2  # 2: the run index says each run's status, origin, time and versions
Entry = tuple[str, bytes, datetime | None]


def _rubric_yaml(version: versioning.Version) -> bytes:
    return serialize_rubric(Rubric.from_dict(dict(version.content))).encode("utf-8")


async def _versions(
    conn: AsyncConnection,
    org_id: str,
    table: Table,
    folder: str,
    extension: str,
    render: Callable[[versioning.Version], bytes],
) -> tuple[list[Entry], int]:
    versions = await versioning.list_versions(conn, table, org_id)
    by_id = {v.id: v for v in versions}
    ordered = sorted(
        versions,
        key=lambda v: (
            by_id[v.root_id].created_at if v.root_id in by_id else v.created_at,
            v.root_id,
            versioning.label_sort_key(v.version_label),
        ),
    )
    entries: list[Entry] = []
    index: list[dict[str, Any]] = []
    for version in ordered:
        root = by_id.get(version.root_id, version)
        tree = f"{safe_part(root.name, folder)}-{short_id(root.id)}"
        path = f"{folder}/{tree}/{safe_part(version.version_label, 'v')}.{extension}"
        parent = by_id.get(version.parent_id) if version.parent_id else None
        index.append(version_entry(version, path, parent.version_label if parent else None))
        entries.append((path, render(version), version.created_at))
    lineage = dump_cli({"versions": index}).encode("utf-8")
    entries.append((f"{folder}/lineage.yaml", lineage, None))
    return entries, len(versions)


def _run_entry(folder: str, run: RunSnapshot) -> dict[str, Any]:
    return {
        "folder": folder,
        "id": run.id,
        "cli_run_id": export_run_id(run),
        "name": run.name,
        "status": run.status,
        "origin": run.origin,
        "created_at": as_utc(run.created_at).isoformat(),
        "definition_id": run.definition_id,
        "rubric_id": run.rubric_id,
    }


async def write_workspace(conn: AsyncConnection, org_id: str, out: IO[bytes]) -> None:
    """Every definition, rubric and run of the organisation as one ZIP (module docstring),
    written into `out` (seekable); runs are streamed (see exchange.run_export)."""
    entries, definition_count = await _versions(
        conn, org_id, definitions, "definitions", "md", definition_markdown
    )
    rubric_entries, rubric_count = await _versions(
        conn, org_id, rubrics, "rubrics", "yaml", _rubric_yaml
    )
    entries += rubric_entries
    index: list[dict[str, Any]] = []
    folders: list[tuple[str, str]] = []  # (folder, run id)
    used: set[str] = set()
    for run_id in await org_run_ids(conn, org_id):
        run = await load_run(conn, org_id, run_id)
        name = safe_part(export_run_id(run))
        if name in used:
            name = f"{name}-{short_id(run.id)}"
        used.add(name)
        index.append(_run_entry(f"runs/{name}", run))
        folders.append((f"runs/{name}", run.id))
    header = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "definitions": definition_count,
        "rubrics": rubric_count,
        "runs": index,
    }
    with ZipStream(out) as archive:
        archive.write("workspace.yaml", dump_cli(header).encode("utf-8"))
        for path, data, moment in entries:
            archive.write(path, data, moment)
        for folder, run_id in folders:
            run = await load_run(conn, org_id, run_id)
            await write_run(conn, org_id, run, archive, prefix=f"{folder}/")


async def export_workspace(conn: AsyncConnection, org_id: str) -> bytes:
    """The workspace ZIP in memory (`write_workspace` streams it into a file)."""
    buffer = io.BytesIO()
    await write_workspace(conn, org_id, buffer)
    return buffer.getvalue()


__all__ = ["FORMAT", "FORMAT_VERSION", "export_workspace", "write_workspace"]
