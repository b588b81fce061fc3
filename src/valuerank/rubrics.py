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
from valuerank.formats import parse_rubric
from valuerank.formats.errors import FormatWarning


def rubric_content_hash(content: dict[str, Any]) -> str:
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


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
    rubric, warnings = parse_rubric(text, source=source_file)
    content = rubric.to_dict()
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
