"""Short ids: the random tail of a UUIDv7, unique where the time-ordered prefix is not."""

from __future__ import annotations

from typing import Any

import pytest

from valuerank import versioning as v
from valuerank.db import Database
from valuerank.db.tables import definitions
from valuerank.errors import AmbiguousIdError, NotFoundError
from valuerank.orgs import ensure_org
from valuerank.queue.ids import new_id
from valuerank.refs import SHORT_ID_LENGTH, short_id


def _row(org_id: str, version_id: str) -> dict[str, Any]:
    return {
        "id": version_id,
        "org_id": org_id,
        "parent_id": None,
        "root_id": version_id,
        "name": "x",
        "version_label": "v1",
        "content": {},
        "content_hash": "h",
        "source_file": None,
    }


async def _root(conn: Any, org_id: str) -> v.Version:
    return await v.create_root(
        conn, definitions, org_id, name="doc", content={"t": 1}, content_hash="h0"
    )


def test_a_short_id_is_the_ids_tail() -> None:
    assert short_id("0190a1b2-c3d4-7e5f-8a9b-0123456789ab") == "456789ab"
    assert len(short_id("0190a1b2-c3d4-7e5f-8a9b-0123456789ab")) == SHORT_ID_LENGTH


async def test_rows_made_together_have_distinct_short_ids_that_resolve(
    db: Database, org_id: str
) -> None:
    async with db.transaction() as conn:
        ids = [new_id() for _ in range(20)]  # how runs, jobs and transcripts get theirs
        for made in ids:
            await v._insert(conn, definitions, _row(org_id, made))
        # The time-ordered prefix is shared, which is why it is not the short id.
        assert len({i[:8] for i in ids}) < len(ids)
        assert len({short_id(i) for i in ids}) == len(ids)
        for made in ids:
            found = await v.get_version(conn, definitions, org_id, short_id(made))
            assert found.id == made
        # A whole id and a unique prefix keep working, as in Git.
        assert (await v.get_version(conn, definitions, org_id, ids[0])).id == ids[0]


async def test_an_ambiguous_short_id_names_every_candidate(db: Database, org_id: str) -> None:
    async with db.transaction() as conn:
        await v._insert(conn, definitions, _row(org_id, "00000001-aaaa-cafe1234"))
        await v._insert(conn, definitions, _row(org_id, "00000002-bbbb-cafe1234"))
        with pytest.raises(AmbiguousIdError) as raised:
            await v.get_version(conn, definitions, org_id, "cafe1234")
        assert "00000001-aaaa-cafe1234" in str(raised.value)
        assert "00000002-bbbb-cafe1234" in str(raised.value)
        # More characters make it unique again.
        found = await v.get_version(conn, definitions, org_id, "bbbb-cafe1234")
        assert found.id == "00000002-bbbb-cafe1234"


async def test_another_organisations_short_id_is_not_found(db: Database, org_id: str) -> None:
    async with db.transaction() as conn:
        other = await ensure_org(conn, "other-org")
        theirs = await _root(conn, other)
        with pytest.raises(NotFoundError):
            await v.get_version(conn, definitions, org_id, short_id(theirs.id))
