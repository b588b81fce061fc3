"""Versioned documents (definitions, rubrics): a DAG like Git's, where a fork has one parent.

Works on any table built by `db.tables._versioned_document_table`. Lineage queries are
recursive CTEs, which PostgreSQL and SQLite both run. Every query is scoped by `org_id`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Row, Table, func, insert, literal, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.errors import ConflictError, InvalidInputError, NotFoundError
from valuerank.findings.keyset import newest_first
from valuerank.queue.dialect import iso
from valuerank.queue.ids import new_id
from valuerank.refs import find_by_ref

ROOT_LABEL = "v1"
_LABEL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


@dataclass(frozen=True)
class Version:
    """One stored version of a document."""

    id: str
    org_id: str
    parent_id: str | None
    root_id: str
    name: str
    version_label: str
    content: dict[str, Any]
    content_hash: str
    source_file: str | None
    created_at: datetime

    def summary(self) -> dict[str, Any]:
        """A JSON-ready description without the content."""
        return {
            "id": self.id,
            "name": self.name,
            "version_label": self.version_label,
            "parent_id": self.parent_id,
            "root_id": self.root_id,
            "content_hash": self.content_hash,
            # With its UTC offset on both databases (SQLite hands back naive UTC).
            "created_at": iso(self.created_at),
        }


@dataclass
class TreeNode:
    version: Version
    depth: int
    children: list[TreeNode] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {**self.version.summary(), "children": [c.to_dict() for c in self.children]}


def _version(row: Row[Any]) -> Version:
    m = row._mapping
    return Version(
        id=m["id"],
        org_id=m["org_id"],
        parent_id=m["parent_id"],
        root_id=m["root_id"],
        name=m["name"],
        version_label=m["version_label"],
        content=m["content"],
        content_hash=m["content_hash"],
        source_file=m["source_file"],
        created_at=m["created_at"],
    )


def label_sort_key(label: str) -> tuple[tuple[int, Any], ...]:
    """Natural order for labels: v1.2 before v1.10."""
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", label)
    )


def next_child_label(parent_label: str, sibling_labels: list[str]) -> str:
    """`v1` → `v1.1`, then `v1.2`…; the number after the parent's label, one past the highest."""
    pattern = re.compile(re.escape(parent_label) + r"\.(\d+)$")
    numbers = [int(m.group(1)) for lbl in sibling_labels if (m := pattern.match(lbl))]
    return f"{parent_label}.{max(numbers, default=0) + 1}"


def validate_label(label: str) -> str:
    if not _LABEL_RE.match(label):
        raise InvalidInputError(
            f"invalid version label {label!r}",
            hint="use 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit",
        )
    return label


class VersionNotFoundError(NotFoundError):
    """No such version in the organisation; the code names the kind (DEFINITION_NOT_FOUND,
    RUBRIC_NOT_FOUND) so API clients can tell which id was wrong."""

    def __init__(self, kind: str, message: str, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.code = f"{kind.upper()}_NOT_FOUND"


async def get_version(conn: AsyncConnection, table: Table, org_id: str, ref: str) -> Version:
    """A version by its id or a unique id prefix (at least 4 characters), like Git."""
    kind = table.name.rstrip("s")
    try:
        row = await find_by_ref(conn, table, org_id, ref, kind=kind, listing=table.name)
    except NotFoundError as exc:
        raise VersionNotFoundError(kind, exc.message, hint=exc.hint) from None
    return _version(row)


async def list_versions(conn: AsyncConnection, table: Table, org_id: str) -> list[Version]:
    rows = await conn.execute(
        select(table).where(table.c.org_id == org_id).order_by(table.c.created_at, table.c.id)
    )
    return [_version(r) for r in rows]


async def list_versions_page(
    conn: AsyncConnection,
    table: Table,
    org_id: str,
    *,
    limit: int,
    after: tuple[str, str] | None = None,
    name: str | None = None,
    label: str | None = None,
) -> list[Version]:
    """Newest first, a keyset page after (`created_at` ISO-8601, `id`): `limit + 1` rows (the
    extra one says there is a next page). `name` filters by a case-insensitive substring of
    the name, `label` by the exact version label."""
    query = select(table).where(table.c.org_id == org_id)
    if name:
        # LIKE wildcards in the filter are matched literally (autoescape).
        query = query.where(func.lower(table.c.name).contains(name.lower(), autoescape=True))
    if label:
        query = query.where(table.c.version_label == label)
    rows = await conn.execute(newest_first(query, table, conn.dialect.name, limit, after))
    return [_version(r) for r in rows]


async def find_by_hash(
    conn: AsyncConnection, table: Table, org_id: str, name: str, content_hash: str
) -> Version | None:
    row = (
        await conn.execute(
            select(table)
            .where(
                table.c.org_id == org_id,
                table.c.name == name,
                table.c.content_hash == content_hash,
            )
            .order_by(table.c.created_at, table.c.id)
            .limit(1)
        )
    ).first()
    return None if row is None else _version(row)


async def latest_named(
    conn: AsyncConnection, table: Table, org_id: str, name: str
) -> Version | None:
    row = (
        await conn.execute(
            select(table)
            .where(table.c.org_id == org_id, table.c.name == name)
            .order_by(table.c.created_at.desc(), table.c.id.desc())
            .limit(1)
        )
    ).first()
    return None if row is None else _version(row)


async def _insert(conn: AsyncConnection, table: Table, values: dict[str, Any]) -> Version:
    try:
        async with conn.begin_nested():
            await conn.execute(insert(table).values(**values))
    except IntegrityError as exc:
        raise ConflictError(
            f"version label {values['version_label']!r} already exists in this lineage",
            hint="choose another --label, or leave it out to number the version automatically",
        ) from exc
    return await get_version(conn, table, values["org_id"], values["id"])


async def create_root(
    conn: AsyncConnection,
    table: Table,
    org_id: str,
    *,
    name: str,
    content: dict[str, Any],
    content_hash: str,
    label: str | None = None,
    source_file: str | None = None,
) -> Version:
    """A new lineage: a version with no parent, labelled `v1` unless told otherwise."""
    version_id = new_id()
    return await _insert(
        conn,
        table,
        {
            "id": version_id,
            "org_id": org_id,
            "parent_id": None,
            "root_id": version_id,
            "name": name,
            "version_label": validate_label(label) if label else ROOT_LABEL,
            "content": content,
            "content_hash": content_hash,
            "source_file": source_file,
        },
    )


async def fork(
    conn: AsyncConnection,
    table: Table,
    org_id: str,
    parent_ref: str,
    *,
    content: dict[str, Any] | None,
    content_hash: str | None,
    name: str | None = None,
    label: str | None = None,
    source_file: str | None = None,
) -> Version:
    """A child of `parent_ref`; its content is given, or copied from the parent."""
    parent = await get_version(conn, table, org_id, parent_ref)
    if label is not None:
        validate_label(label)
    # Automatic labels can race with a concurrent fork of the same parent: retry a few times.
    for _ in range(5):
        chosen = label
        if chosen is None:
            siblings = (
                await conn.execute(
                    select(table.c.version_label).where(table.c.root_id == parent.root_id)
                )
            ).scalars()
            chosen = next_child_label(parent.version_label, list(siblings))
        try:
            return await _insert(
                conn,
                table,
                {
                    "id": new_id(),
                    "org_id": org_id,
                    "parent_id": parent.id,
                    "root_id": parent.root_id,
                    "name": name or parent.name,
                    "version_label": chosen,
                    "content": parent.content if content is None else content,
                    "content_hash": parent.content_hash if content_hash is None else content_hash,
                    "source_file": source_file,
                },
            )
        except ConflictError:
            if label is not None:
                raise
    raise ConflictError("could not choose a free version label", hint="give one with --label")


@dataclass(frozen=True)
class VersionRecord:
    """A version as an export describes it, to be restored with its place in its tree."""

    id: str
    parent_id: str | None
    root_id: str
    name: str
    version_label: str
    content: dict[str, Any]
    content_hash: str
    created_at: datetime | None
    source_file: str | None = None


async def restore(
    conn: AsyncConnection,
    table: Table,
    org_id: str,
    record: VersionRecord,
    ids: dict[str, str],
) -> tuple[Version, bool]:
    """Write an exported version back (its parent first), keeping its label, name and
    creation time, and its id when no row holds it yet. `ids` maps exported ids to stored
    ones and grows with this one. A version restored before is reused: (version, False)."""
    created_at: datetime | None = None
    if record.created_at is not None:
        moment = record.created_at.astimezone(UTC)
        # SQLite stores naive UTC (an aware value would lose its offset silently).
        created_at = moment.replace(tzinfo=None) if conn.dialect.name == "sqlite" else moment
    same = (
        table.c.org_id == org_id,
        table.c.name == record.name,
        table.c.version_label == record.version_label,
        table.c.content_hash == record.content_hash,
    )
    taken = (await conn.execute(select(table.c.id).where(table.c.id == record.id))).first()
    # Restored before: under its own id, or (its id was taken elsewhere) under a new one with
    # the same name, label, content and creation time.
    query = select(table).where(*same, table.c.id == record.id)
    if taken is not None and created_at is not None:
        query = select(table).where(*same, table.c.created_at == created_at).limit(1)
    found = (await conn.execute(query)).first()
    if found is not None:
        ids[record.id] = str(found.id)
        return _version(found), False
    version_id = record.id if taken is None else new_id()
    ids[record.id] = version_id
    values: dict[str, Any] = {
        "id": version_id,
        "org_id": org_id,
        "parent_id": ids[record.parent_id] if record.parent_id else None,
        "root_id": ids[record.root_id],
        "name": record.name,
        "version_label": validate_label(record.version_label),
        "content": record.content,
        "content_hash": record.content_hash,
        "source_file": record.source_file,
    }
    if created_at is not None:
        values["created_at"] = created_at
    return await _insert(conn, table, values), True


async def replace_content(
    conn: AsyncConnection,
    table: Table,
    version: Version,
    *,
    content: dict[str, Any],
    content_hash: str,
) -> Version:
    """Overwrite a version's content in place (callers check that it is still mutable)."""
    await conn.execute(
        update(table)
        .where(table.c.org_id == version.org_id, table.c.id == version.id)
        .values(content=content, content_hash=content_hash)
    )
    return await get_version(conn, table, version.org_id, version.id)


async def ancestors(
    conn: AsyncConnection, table: Table, org_id: str, version_id: str
) -> list[Version]:
    """The chain from the root down to the parent of `version_id` (root first)."""
    chain = (
        select(table.c.id, table.c.parent_id, literal(0).label("depth"))
        .where(table.c.org_id == org_id, table.c.id == version_id)
        .cte("chain", recursive=True)
    )
    chain = chain.union_all(
        select(table.c.id, table.c.parent_id, (chain.c.depth + 1).label("depth")).join(
            chain, table.c.id == chain.c.parent_id
        )
    )
    rows = await conn.execute(
        select(table)
        .join(chain, table.c.id == chain.c.id)
        .where(chain.c.depth > 0)
        .order_by(chain.c.depth.desc())
    )
    return [_version(r) for r in rows]


async def descendants(
    conn: AsyncConnection, table: Table, org_id: str, version_id: str
) -> list[tuple[Version, int]]:
    """Every version below `version_id`, with its depth below it (1 = child)."""
    below = (
        select(table.c.id, literal(0).label("depth"))
        .where(table.c.org_id == org_id, table.c.id == version_id)
        .cte("below", recursive=True)
    )
    below = below.union_all(
        select(table.c.id, (below.c.depth + 1).label("depth")).join(
            below, table.c.parent_id == below.c.id
        )
    )
    rows = await conn.execute(
        select(table, below.c.depth).join(below, table.c.id == below.c.id).where(below.c.depth > 0)
    )
    found = [(_version(r), int(r._mapping["depth"])) for r in rows]
    # Breadth first, siblings in natural label order (timestamps may tie within a second).
    found.sort(key=lambda item: (item[1], label_sort_key(item[0].version_label)))
    return found


@dataclass(frozen=True)
class Lineage:
    """A version with its ancestors (root first) and every descendant (with its depth)."""

    version: Version
    ancestors: list[Version]
    descendants: list[tuple[Version, int]]

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.version.summary(),
            "ancestors": [a.summary() for a in self.ancestors],
            "descendants": [{**d.summary(), "depth": depth} for d, depth in self.descendants],
        }


async def lineage(conn: AsyncConnection, table: Table, version: Version) -> Lineage:
    """The lineage of `version` (already looked up, in its organisation)."""
    return Lineage(
        version=version,
        ancestors=await ancestors(conn, table, version.org_id, version.id),
        descendants=await descendants(conn, table, version.org_id, version.id),
    )


async def tree(conn: AsyncConnection, table: Table, org_id: str, version_id: str) -> TreeNode:
    """The whole tree that `version_id` belongs to, from its root."""
    version = await get_version(conn, table, org_id, version_id)
    root = await get_version(conn, table, org_id, version.root_id)
    nodes = {root.id: TreeNode(root, 0)}
    for child, depth in await descendants(conn, table, org_id, root.id):
        node = TreeNode(child, depth)
        nodes[child.id] = node
        assert child.parent_id is not None
        nodes[child.parent_id].children.append(node)
    for node in nodes.values():
        node.children.sort(key=lambda n: label_sort_key(n.version.version_label))
    return nodes[root.id]
