"""Exporting definition versions as the CLI's `.md` files, alone or with their ancestry.

* One version: `exp-<name>.md` (see naming.exp_file_name), the file as the CLI writes it.
* With ancestry: a ZIP `exp-<name>.<label>.lineage.zip` holding
  `definitions/<NN>-<label>.md` for every version from the root down to this one (`01` is
  the root) and `lineage.yaml`:

      definition: <name of the exported version>
      versions:
      - file: definitions/01-v1.md
        id: …            label: v1          parent_id: null      parent_label: null
        name: …          content_hash: …    created_at: ISO-8601

  The files are plain CLI definitions, so the CLI can use any of them; `lineage.yaml` is
  what a reader needs to rebuild the chain of forks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank import versioning
from valuerank.definitions.service import get_definition, lineage
from valuerank.exchange.naming import exp_file_name, safe_part
from valuerank.exchange.zip_write import build_zip
from valuerank.formats import Definition, serialize_definition
from valuerank.formats.yaml_io import dump_cli
from valuerank.queue.dialect import iso

MARKDOWN = "text/markdown; charset=utf-8"
ZIP = "application/zip"


@dataclass(frozen=True)
class ExportedFile:
    """An export: the file name to offer, its bytes and its media type."""

    file_name: str
    data: bytes
    media_type: str


def version_entry(
    version: versioning.Version, file: str, parent_label: str | None
) -> dict[str, Any]:
    return {
        "file": file,
        "id": version.id,
        "name": version.name,
        "label": version.version_label,
        "parent_id": version.parent_id,
        "parent_label": parent_label,
        "root_id": version.root_id,
        "content_hash": version.content_hash,
        "created_at": iso(version.created_at),
    }


def definition_markdown(version: versioning.Version) -> bytes:
    return serialize_definition(Definition.from_dict(version.content)).encode("utf-8")


async def export_definition(
    conn: AsyncConnection, org_id: str, ref: str, *, with_ancestry: bool = False
) -> ExportedFile:
    """A definition version as `.md`, or with its ancestry as a ZIP (module docstring)."""
    stored = await get_definition(conn, org_id, ref)
    version = stored.version
    base = exp_file_name(version.name, "")
    if not with_ancestry:
        return ExportedFile(
            f"{base}.md", serialize_definition(stored.definition).encode("utf-8"), MARKDOWN
        )
    found = await lineage(conn, org_id, version.id)
    chain = [*found.ancestors, version]
    labels = {v.id: v.version_label for v in chain}
    width = max(2, len(str(len(chain))))
    entries: list[dict[str, Any]] = []
    files: list[tuple[str, bytes, Any]] = []
    for number, item in enumerate(chain, start=1):
        path = f"definitions/{number:0{width}d}-{safe_part(item.version_label, 'v')}.md"
        parent = labels.get(item.parent_id) if item.parent_id else None
        entries.append(version_entry(item, path, parent))
        files.append((path, definition_markdown(item), item.created_at))
    index = dump_cli({"definition": version.name, "versions": entries}).encode("utf-8")
    files.append(("lineage.yaml", index, version.created_at))
    name = f"{base}.{safe_part(version.version_label, 'v')}.lineage.zip"
    return ExportedFile(name, build_zip(files), ZIP)


__all__ = ["MARKDOWN", "ZIP", "ExportedFile", "definition_markdown", "export_definition"]
