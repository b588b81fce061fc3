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

from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import Table, select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank import versioning
from valuerank.db.tables import definitions, rubrics, runs
from valuerank.exchange.definition_export import definition_markdown, version_entry
from valuerank.exchange.naming import safe_part
from valuerank.exchange.run_data import org_run_ids
from valuerank.exchange.run_export import RunFolder, run_folder
from valuerank.exchange.zip_write import build_zip
from valuerank.formats import Rubric, serialize_rubric
from valuerank.formats.yaml_io import dump_cli
from valuerank.queue.dialect import as_utc

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
        tree = f"{safe_part(root.name, folder)}-{root.id[:8]}"
        path = f"{folder}/{tree}/{safe_part(version.version_label, 'v')}.{extension}"
        parent = by_id.get(version.parent_id) if version.parent_id else None
        index.append(version_entry(version, path, parent.version_label if parent else None))
        entries.append((path, render(version), version.created_at))
    lineage = dump_cli({"versions": index}).encode("utf-8")
    entries.append((f"{folder}/lineage.yaml", lineage, None))
    return entries, len(versions)


async def _run_entry(conn: AsyncConnection, org_id: str, folder: RunFolder) -> dict[str, Any]:
    row = (
        await conn.execute(
            select(
                runs.c.name,
                runs.c.status,
                runs.c.origin,
                runs.c.definition_id,
                runs.c.rubric_id,
            ).where(runs.c.org_id == org_id, runs.c.id == folder.db_id)
        )
    ).one()
    return {
        "id": folder.db_id,
        "cli_run_id": folder.run_id,
        "name": row.name,
        "status": row.status,
        "origin": row.origin,
        "created_at": as_utc(folder.created_at).isoformat(),
        "definition_id": row.definition_id,
        "rubric_id": row.rubric_id,
    }


async def export_workspace(conn: AsyncConnection, org_id: str) -> bytes:
    """Every definition, rubric and run of the organisation as one ZIP (module docstring)."""
    entries, definition_count = await _versions(
        conn, org_id, definitions, "definitions", "md", definition_markdown
    )
    rubric_entries, rubric_count = await _versions(
        conn, org_id, rubrics, "rubrics", "yaml", _rubric_yaml
    )
    entries += rubric_entries
    index: list[dict[str, Any]] = []
    used: set[str] = set()
    for run_id in await org_run_ids(conn, org_id):
        folder = await run_folder(conn, org_id, run_id)
        name = safe_part(folder.run_id)
        if name in used:
            name = f"{name}-{folder.db_id[:8]}"
        used.add(name)
        index.append({"folder": f"runs/{name}", **await _run_entry(conn, org_id, folder)})
        entries += [(f"runs/{name}/{path}", data, folder.created_at) for path, data in folder.files]
    header = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "definitions": definition_count,
        "rubrics": rubric_count,
        "runs": index,
    }
    return build_zip([("workspace.yaml", dump_cli(header).encode("utf-8"), None), *entries])


__all__ = ["FORMAT", "FORMAT_VERSION", "export_workspace"]
