"""Values rubrics in the database, versioned like definitions.

Importing a rubric whose name is already stored adds a new version below the latest one
(unless the content is identical, which stores nothing).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank import versioning
from valuerank.db.tables import rubrics
from valuerank.definitions.service import has_nul
from valuerank.errors import InvalidInputError
from valuerank.formats import parse_rubric
from valuerank.formats.errors import FormatError, FormatWarning

MAX_NAME = 300  # the column's size


def rubric_content_hash(content: dict[str, Any]) -> str:
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def rubric_summary(version: versioning.Version) -> dict[str, Any]:
    """A rubric version as the API and the CLI list it: its summary and its value names."""
    return {**version.summary(), "values": list(version.content.get("values", {}))}


@dataclass(frozen=True)
class RubricImport:
    version: versioning.Version
    created: bool
    warnings: list[FormatWarning] = field(default_factory=list)


async def import_rubric(
    conn: AsyncConnection,
    org_id: str,
    text: str,
    *,
    name: str,
    source_file: str | None = None,
) -> RubricImport:
    name = name.strip()
    if not name or len(name) > MAX_NAME or "\x00" in name:
        raise InvalidInputError(
            f"a rubric name has 1 to {MAX_NAME} characters and no NUL", hint="e.g. values_rubric"
        )
    if "\x00" in text:  # no YAML holds one, and PostgreSQL cannot store it
        raise FormatError("the file holds a NUL character", source=source_file, hint="remove it")
    rubric, warnings = parse_rubric(text, source=source_file)
    content = rubric.to_dict()
    if has_nul(content):  # written as YAML's "\0" escape
        raise FormatError("a value holds a NUL character", source=source_file, hint="remove it")
    digest = rubric_content_hash(content)
    existing = await versioning.find_by_hash(conn, rubrics, org_id, name, digest)
    if existing is not None:
        return RubricImport(existing, False, warnings)
    latest = await versioning.latest_named(conn, rubrics, org_id, name)
    if latest is None:
        version = await versioning.create_root(
            conn,
            rubrics,
            org_id,
            name=name,
            content=content,
            content_hash=digest,
            source_file=source_file,
        )
    else:
        version = await versioning.fork(
            conn,
            rubrics,
            org_id,
            latest.id,
            content=content,
            content_hash=digest,
            source_file=source_file,
        )
    return RubricImport(version, True, warnings)


async def get_rubric(conn: AsyncConnection, org_id: str, ref: str) -> versioning.Version:
    return await versioning.get_version(conn, rubrics, org_id, ref)


async def list_rubrics(conn: AsyncConnection, org_id: str) -> list[versioning.Version]:
    return await versioning.list_versions(conn, rubrics, org_id)


async def list_rubrics_page(
    conn: AsyncConnection,
    org_id: str,
    *,
    limit: int,
    after: tuple[str, str] | None = None,
    name: str | None = None,
    label: str | None = None,
) -> list[versioning.Version]:
    """Newest first, `limit + 1` versions after the cursor (see `versioning.list_versions_page`)."""
    return await versioning.list_versions_page(
        conn, rubrics, org_id, limit=limit, after=after, name=name, label=label
    )


async def rubric_lineage(conn: AsyncConnection, org_id: str, ref: str) -> versioning.Lineage:
    """Ancestors (root first) and descendants of a rubric version (imports of a name chain)."""
    return await versioning.lineage(conn, rubrics, await get_rubric(conn, org_id, ref))


async def rubric_tree(conn: AsyncConnection, org_id: str, ref: str) -> versioning.TreeNode:
    return await versioning.tree(conn, rubrics, org_id, ref)
