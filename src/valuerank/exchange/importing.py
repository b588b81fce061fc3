"""The entry points of every import: a path or uploaded bytes → runs, or a whole workspace.

The source is read safely (`archive_safety`) with only the files an import uses; a
workspace ZIP (it has `workspace.yaml`) restores its definition and rubric trees and its
runs (`workspace_import`), anything else imports its runs (`run_import`).
"""

from __future__ import annotations

import io
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.exchange.archive_safety import Limits, SourceTree, read_source, read_zip
from valuerank.exchange.cli_folder import wanted
from valuerank.exchange.errors import ImportFormatError
from valuerank.exchange.run_import import ImportedRun, import_tree
from valuerank.exchange.workspace_import import (
    WorkspaceImport,
    import_workspace_tree,
    is_workspace,
    workspace_file,
)


def import_wanted(path: str) -> bool:
    return wanted(path) or workspace_file(path)


def read_import(path: Path, limits: Limits | None = None) -> SourceTree:
    return read_source(Path(path), import_wanted, limits or Limits())


async def import_source(conn: AsyncConnection, org_id: str, tree: SourceTree) -> list[ImportedRun]:
    """The runs of a source; a workspace is restored whole (trees too)."""
    if is_workspace(tree):
        return (await import_workspace_tree(conn, org_id, tree)).runs
    return await import_tree(conn, org_id, tree)


async def import_runs(
    conn: AsyncConnection, org_id: str, path: Path, *, limits: Limits | None = None
) -> list[ImportedRun]:
    """Import the runs of a run ZIP, a CLI run folder, a folder of transcripts, one
    transcript, or a workspace ZIP (then its definition and rubric trees too)."""
    return await import_source(conn, org_id, read_import(path, limits))


async def import_zip_bytes(
    conn: AsyncConnection,
    org_id: str,
    data: bytes,
    *,
    label: str = "upload.zip",
    limits: Limits | None = None,
) -> list[ImportedRun]:
    """Import an uploaded run or workspace ZIP held in memory (the API's upload)."""
    tree = read_zip(io.BytesIO(data), import_wanted, limits or Limits(), label)
    return await import_source(conn, org_id, tree)


def read_workspace(path: Path, limits: Limits | None = None) -> SourceTree:
    """A workspace ZIP's (or unpacked folder's) files; INVALID_IMPORT if it is not one."""
    tree = read_import(path, limits)
    if not is_workspace(tree):
        raise ImportFormatError(
            f"{tree.label} is not a workspace export (no workspace.yaml)",
            hint="import a run ZIP or CLI folder with `valuerank import run`",
        )
    return tree


async def import_workspace(
    conn: AsyncConnection, org_id: str, path: Path, *, limits: Limits | None = None
) -> WorkspaceImport:
    """Restore a workspace ZIP (or its unpacked folder): trees, then runs."""
    return await import_workspace_tree(conn, org_id, read_workspace(path, limits))


__all__ = [
    "import_runs",
    "import_source",
    "import_wanted",
    "import_workspace",
    "import_zip_bytes",
    "read_import",
    "read_workspace",
]
