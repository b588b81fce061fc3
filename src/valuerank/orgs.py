"""Organisations: every tenant row belongs to one; an embedded install has one default.

An organisation has a `slug` (lower-case letters, digits and dashes: how commands and the API
name it) and a display `name`.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Row, func, or_, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import memberships, orgs
from valuerank.errors import ConflictError, InvalidInputError, NotFoundError
from valuerank.queue.dialect import iso

MAX_SLUG_LENGTH = 64
MAX_NAME_LENGTH = 200
_SLUG = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?")


@dataclass(frozen=True)
class Org:
    id: str
    slug: str
    name: str
    created_at: datetime
    members: int | None = None  # filled by listings that count them

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "slug": self.slug,
            "name": self.name,
            "created_at": iso(self.created_at),
        }
        if self.members is not None:
            data["members"] = self.members
        return data


def _org(row: Row[Any], members: int | None = None) -> Org:
    return Org(row.id, row.slug, row.name, row.created_at, members)


def slugify(name: str) -> str:
    """`Acme Research Lab` → `acme-research-lab` (may be empty for a name without letters)."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.strip().lower()).strip("-")
    return slug[:MAX_SLUG_LENGTH].rstrip("-")


def check_slug(slug: str) -> str:
    if _SLUG.fullmatch(slug) is None:
        raise InvalidInputError(
            f"{slug!r} is not a valid organisation slug",
            hint=f"use lower-case letters, digits and dashes (at most {MAX_SLUG_LENGTH}), "
            "starting and ending with a letter or digit",
        )
    return slug


async def ensure_org(conn: AsyncConnection, slug: str, name: str | None = None) -> str:
    """The id of the organisation `slug`, created if it does not exist yet."""
    existing = await conn.scalar(select(orgs.c.id).where(orgs.c.slug == slug))
    if existing is not None:
        return str(existing)
    dialect_insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    # Two processes may create the default organisation at once: the loser keeps the winner's.
    await conn.execute(
        dialect_insert(orgs)
        .values(id=str(uuid.uuid4()), slug=slug, name=name or slug)
        .on_conflict_do_nothing(index_elements=["slug"])
    )
    return await org_id_for(conn, slug)


async def org_id_for(conn: AsyncConnection, slug: str) -> str:
    """The id of an existing organisation."""
    existing = await conn.scalar(select(orgs.c.id).where(orgs.c.slug == slug))
    if existing is None:
        raise NotFoundError(f"organisation {slug!r} does not exist")
    return str(existing)


async def create_org(conn: AsyncConnection, name: str, *, slug: str | None = None) -> Org:
    """A new organisation named `name`, its slug derived from the name unless given.

    CONFLICT when the slug is taken.
    """
    display = name.strip()
    if not display:
        raise InvalidInputError("the organisation name is empty")
    if len(display) > MAX_NAME_LENGTH:
        raise InvalidInputError(f"the organisation name is longer than {MAX_NAME_LENGTH}")
    chosen = check_slug(slug.strip() if slug is not None else slugify(display))
    taken = await conn.scalar(select(orgs.c.id).where(orgs.c.slug == chosen))
    if taken is not None:
        raise ConflictError(
            f"an organisation {chosen!r} exists already",
            hint="choose another name, or give another --slug",
        )
    row = (
        await conn.execute(
            orgs.insert().values(id=str(uuid.uuid4()), slug=chosen, name=display).returning(*orgs.c)
        )
    ).one()
    return _org(row, 0)


async def get_org(conn: AsyncConnection, ref: str) -> Org:
    """The organisation whose slug or id is `ref`."""
    ref = ref.strip()
    row = (
        await conn.execute(select(orgs).where(or_(orgs.c.slug == ref, orgs.c.id == ref)))
    ).first()
    if row is None:
        raise NotFoundError(
            f"no organisation {ref!r}", hint="`valuerank orgs list` shows the organisations"
        )
    return _org(row)


async def list_orgs(conn: AsyncConnection) -> list[Org]:
    """Every organisation of the install with its number of members, by slug."""
    count = (
        select(func.count())
        .select_from(memberships)
        .where(memberships.c.org_id == orgs.c.id)
        .scalar_subquery()
    )
    rows = (await conn.execute(select(orgs, count.label("members")).order_by(orgs.c.slug))).all()
    return [_org(row, int(row.members)) for row in rows]
