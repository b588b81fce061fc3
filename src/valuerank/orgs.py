"""Organisations: every tenant row belongs to one; an embedded install has one default."""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import orgs
from valuerank.errors import NotFoundError


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
