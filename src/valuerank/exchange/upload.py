"""One uploaded file, whatever it is (the API's `POST /api/import`): a run ZIP, a CLI run
folder zipped, a workspace ZIP, a definition `.md`, a values rubric, or one transcript.

The kind is told from the bytes (a ZIP) or by the CLI's naming and content
(`formats.detect`); everything is checked before anything is written, and the caller's
transaction makes the import all or nothing.
"""

from __future__ import annotations

import asyncio
import io
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.definitions.service import import_definition, parse_and_check
from valuerank.exchange.archive_safety import Limits, SourceTree, read_zip
from valuerank.exchange.cli_folder import wanted
from valuerank.exchange.errors import ImportFormatError
from valuerank.exchange.importing import import_wanted
from valuerank.exchange.run_import import import_tree
from valuerank.exchange.workspace_import import import_workspace_tree, is_workspace
from valuerank.formats.detect import detect_kind
from valuerank.rubrics import import_rubric

ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a ZIP's first entry, or an empty ZIP
DEFAULT_NAME = "upload"


@dataclass(frozen=True)
class UploadImport:
    """What an upload held and what became of it (`created`: anything new was written)."""

    kind: str  # "runs" | "workspace" | "definition" | "rubric"
    created: bool
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "created": self.created, **self.details}


def _text(data: bytes, label: str) -> str:
    if b"\x00" in data:  # no CLI text file holds one (and PostgreSQL cannot store it)
        raise ImportFormatError(
            f"{label}: neither a ZIP archive nor text (it holds NUL bytes)",
            hint="upload a run or workspace ZIP, a definition .md, a rubric or a transcript",
        )
    try:
        return data.decode("utf-8").lstrip("\ufeff")
    except UnicodeDecodeError as exc:
        raise ImportFormatError(
            f"{label}: neither a ZIP archive nor UTF-8 text (byte {exc.start})",
            hint="upload a run or workspace ZIP, a definition .md, a rubric or a transcript",
        ) from None


@dataclass(frozen=True)
class ReadUpload:
    """An uploaded file as read before any transaction: a ZIP's checked members, or its bytes."""

    data: bytes
    label: str
    filename: str | None
    tree: SourceTree | None  # a ZIP's wanted members; None: not a ZIP


async def read_uploaded(
    data: bytes, *, filename: str | None = None, limits: Limits | None = None
) -> ReadUpload:
    """Read and check an upload's ZIP members (UNSAFE_ARCHIVE and size limits) in a thread:
    60,000 members take seconds of CPU, during which the event loop goes on answering
    everyone else, and no transaction (SQLite's write lock) is held meanwhile."""
    label = filename or DEFAULT_NAME
    tree = None
    if data.startswith(ZIP_MAGIC):
        tree = await asyncio.to_thread(
            read_zip, io.BytesIO(data), import_wanted, limits or Limits(), label
        )
    return ReadUpload(data, label, filename, tree)


async def import_read(conn: AsyncConnection, org_id: str, read: ReadUpload) -> UploadImport:
    """Import an upload `read_uploaded` has read (see the module docstring), all or nothing in
    the caller's transaction; INVALID_IMPORT or INVALID_FILE (naming the file and line) when it
    is none of the kinds or is broken."""
    label, filename, tree = read.label, read.filename, read.tree
    if tree is not None:
        if is_workspace(tree):
            restored = await import_workspace_tree(conn, org_id, tree)
            created = bool(restored.definitions or restored.rubrics) or any(
                r.created for r in restored.runs
            )
            return UploadImport("workspace", created, restored.to_dict())
        runs = await import_tree(conn, org_id, tree)
        return UploadImport(
            "runs", any(r.created for r in runs), {"runs": [r.to_dict() for r in runs]}
        )
    data = read.data
    text = _text(data, label)
    kind = detect_kind(label, text)
    if kind == "definition":
        parse_and_check(text, label)
        stored, created = await import_definition(conn, org_id, text, source_file=filename)
        return UploadImport("definition", created, {"definition": stored.summary()})
    if kind == "rubric":
        name = PurePosixPath(filename).stem if filename else "values_rubric"
        result = await import_rubric(conn, org_id, text, name=name, source_file=filename)
        return UploadImport(
            "rubric",
            result.created,
            {
                "rubric": result.version.summary(),
                "warnings": [w.render(label) for w in result.warnings],
            },
        )
    if kind == "transcript" and filename and wanted(filename):
        runs = await import_tree(conn, org_id, SourceTree(label, "folder", {filename: data}))
        return UploadImport(
            "runs", any(r.created for r in runs), {"runs": [r.to_dict() for r in runs]}
        )
    hint = "upload a run or workspace ZIP, a definition .md, a values rubric, or a transcript"
    if kind == "transcript":
        hint = "give a transcript its CLI file name (transcript.<scenario>.<model>….md)"
    raise ImportFormatError(
        f"{label}: not a file this import takes ({kind or 'unknown'})", hint=hint
    )


__all__ = ["ReadUpload", "UploadImport", "import_read", "read_uploaded"]
