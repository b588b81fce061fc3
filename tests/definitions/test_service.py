"""Definition versions in the database, on both backends."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from sqlalchemy import insert

from valuerank.db import Database
from valuerank.db.tables import runs
from valuerank.definitions import service
from valuerank.errors import ImmutableVersionError, NotFoundError
from valuerank.orgs import ensure_org

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "exp-cafe-mandate.md"


async def test_a_version_with_runs_is_immutable(db: Database, org_id: str) -> None:
    text = EXAMPLE.read_text("utf-8")
    async with db.transaction() as conn:
        stored, _ = await service.import_definition(conn, org_id, text)
        edited = service.parse_and_check(text.replace("small café", "large restaurant"))
        # Unused: an edit changes the version in place.
        updated = await service.update_definition(conn, org_id, stored.version.id, edited)
        assert "large restaurant" in updated.definition.template
        assert updated.version.content_hash != stored.version.content_hash
        await conn.execute(
            insert(runs).values(
                id=str(uuid.uuid4()), org_id=org_id, definition_id=stored.version.id
            )
        )
        with pytest.raises(ImmutableVersionError, match="fork"):
            await service.update_definition(conn, org_id, stored.version.id, stored.definition)
        # The edit goes to a fork instead; the used version is unchanged.
        child = await service.fork_definition(
            conn, org_id, stored.version.id, definition=stored.definition
        )
        assert child.version.parent_id == stored.version.id
        again = await service.get_definition(conn, org_id, stored.version.id)
        assert again.version.content_hash == updated.version.content_hash


async def test_another_organisations_definition_is_invisible(db: Database, org_id: str) -> None:
    text = EXAMPLE.read_text("utf-8")
    async with db.transaction() as conn:
        other = await ensure_org(conn, "other-lab")
        theirs, _ = await service.import_definition(conn, other, text)
        for call in (
            service.get_definition(conn, org_id, theirs.version.id),
            service.lineage(conn, org_id, theirs.version.id),
            service.export_markdown(conn, org_id, theirs.version.id),
            service.expand_scenarios(conn, org_id, theirs.version.id),
            service.diff(conn, org_id, theirs.version.id, theirs.version.id),
        ):
            with pytest.raises(NotFoundError):
                await call
        assert await service.list_definitions(conn, org_id) == []
        # Same content in our organisation is a separate lineage, not a duplicate of theirs.
        ours, created = await service.import_definition(conn, org_id, text)
        assert created and ours.version.id != theirs.version.id


async def test_expansion_is_stored_content_based(db: Database, org_id: str) -> None:
    async with db.transaction() as conn:
        stored, _ = await service.import_definition(conn, org_id, EXAMPLE.read_text("utf-8"))
        full = await service.expand_scenarios(conn, org_id, stored.version.id)
        half = await service.expand_scenarios(
            conn, org_id, stored.version.id, sample_percentage=50, sample_seed=3
        )
    assert full.total == half.total == len(full.file.scenarios) == 16
    assert len(half.file.scenarios) == 8
    assert {s.id for s in half.file.scenarios} <= {s.id for s in full.file.scenarios}
