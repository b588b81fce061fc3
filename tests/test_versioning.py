"""The version DAG on both databases: labels, lineage by recursive CTE, ids, isolation."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank import versioning as v
from valuerank.db import Database
from valuerank.db.tables import definitions, rubrics
from valuerank.errors import AmbiguousIdError, ConflictError, InvalidInputError, NotFoundError
from valuerank.orgs import ensure_org

CONTENT = {"text": "hello"}


async def _root(
    conn: AsyncConnection, org_id: str, name: str = "doc", label: str | None = None
) -> v.Version:
    return await v.create_root(
        conn, definitions, org_id, name=name, content=CONTENT, content_hash="h0", label=label
    )


def test_next_child_label() -> None:
    assert v.next_child_label("v1", []) == "v1.1"
    assert v.next_child_label("v1", ["v1", "v1.1", "v1.2", "v1.1.1"]) == "v1.3"
    assert v.next_child_label("v1.1", ["v1", "v1.1", "v1.2", "v1.1.1"]) == "v1.1.2"
    assert v.next_child_label("exp-A", ["exp-A", "v1.9"]) == "exp-A.1"
    assert v.next_child_label("v1", ["v1.9", "v1.10"]) == "v1.11"


def test_label_sort_key_is_natural() -> None:
    labels = ["v1.10", "v1.2", "v1", "v1.1.1"]
    assert sorted(labels, key=v.label_sort_key) == ["v1", "v1.1.1", "v1.2", "v1.10"]


@pytest.mark.parametrize("bad", ["", " v1", "v 1", "-x", "a" * 101, "v1/2"])
def test_invalid_labels_are_refused(bad: str) -> None:
    with pytest.raises(InvalidInputError):
        v.validate_label(bad)


async def test_automatic_labels_follow_the_tree(db: Database, org_id: str) -> None:
    async with db.transaction() as conn:
        root = await _root(conn, org_id)
        a = await v.fork(conn, definitions, org_id, root.id, content=None, content_hash=None)
        b = await v.fork(conn, definitions, org_id, root.id, content=None, content_hash=None)
        aa = await v.fork(conn, definitions, org_id, a.id, content={"x": 1}, content_hash="h1")
        ab = await v.fork(conn, definitions, org_id, a.id, content=None, content_hash=None)
    assert [root.version_label, a.version_label, b.version_label] == ["v1", "v1.1", "v1.2"]
    assert [aa.version_label, ab.version_label] == ["v1.1.1", "v1.1.2"]
    assert a.content == CONTENT and a.content_hash == "h0"  # copied from the parent
    assert aa.content == {"x": 1} and aa.parent_id == a.id and aa.root_id == root.id


async def test_user_labels_and_conflicts(db: Database, org_id: str) -> None:
    async with db.transaction() as conn:
        root = await _root(conn, org_id, label="baseline")
        child = await v.fork(
            conn, definitions, org_id, root.id, content=None, content_hash=None, label="owner"
        )
        auto = await v.fork(conn, definitions, org_id, root.id, content=None, content_hash=None)
        assert (root.version_label, child.version_label) == ("baseline", "owner")
        assert auto.version_label == "baseline.1"
        with pytest.raises(ConflictError, match="already exists"):
            await v.fork(
                conn, definitions, org_id, root.id, content=None, content_hash=None, label="owner"
            )
        # The failed insert left the transaction usable and wrote nothing.
        assert len(await v.list_versions(conn, definitions, org_id)) == 3


async def test_lineage_by_recursive_cte(db: Database, org_id: str) -> None:
    async with db.transaction() as conn:
        root = await _root(conn, org_id)
        a = await v.fork(conn, definitions, org_id, root.id, content=None, content_hash=None)
        b = await v.fork(conn, definitions, org_id, root.id, content=None, content_hash=None)
        aa = await v.fork(conn, definitions, org_id, a.id, content=None, content_hash=None)
        aaa = await v.fork(conn, definitions, org_id, aa.id, content=None, content_hash=None)
        unrelated = await _root(conn, org_id, name="other")

        assert [x.id for x in await v.ancestors(conn, definitions, org_id, aaa.id)] == [
            root.id,
            a.id,
            aa.id,
        ]
        assert await v.ancestors(conn, definitions, org_id, root.id) == []
        below = await v.descendants(conn, definitions, org_id, root.id)
        assert [(x.id, d) for x, d in below] == [(a.id, 1), (b.id, 1), (aa.id, 2), (aaa.id, 3)]
        assert [x.id for x, _ in await v.descendants(conn, definitions, org_id, a.id)] == [
            aa.id,
            aaa.id,
        ]
        assert await v.descendants(conn, definitions, org_id, unrelated.id) == []

        tree = await v.tree(conn, definitions, org_id, aa.id)  # any member gives the whole tree
        assert tree.version.id == root.id
        assert [c.version.version_label for c in tree.children] == ["v1.1", "v1.2"]
        assert tree.children[0].children[0].children[0].version.id == aaa.id
        assert tree.to_dict()["children"][0]["version_label"] == "v1.1"


async def test_ids_resolve_by_unique_prefix(db: Database, org_id: str) -> None:
    async with db.transaction() as conn:
        root = await _root(conn, org_id)
        assert (await v.get_version(conn, definitions, org_id, root.id[:8])).id == root.id
        with pytest.raises(NotFoundError, match="valuerank definitions list"):
            await v.get_version(conn, definitions, org_id, "abc")  # too short to be a prefix
        with pytest.raises(NotFoundError):
            await v.get_version(conn, definitions, org_id, "ffffffff-no-such")
        # Force two ids with one prefix to prove ambiguity is reported, not guessed.
        await v._insert(
            conn,
            definitions,
            {
                "id": "abcd0000-1",
                "org_id": org_id,
                "parent_id": None,
                "root_id": "abcd0000-1",
                "name": "x",
                "version_label": "v1",
                "content": {},
                "content_hash": "h",
                "source_file": None,
            },
        )
        await v._insert(
            conn,
            definitions,
            {
                "id": "abcd0000-2",
                "org_id": org_id,
                "parent_id": None,
                "root_id": "abcd0000-2",
                "name": "x",
                "version_label": "v1",
                "content": {},
                "content_hash": "h",
                "source_file": None,
            },
        )
        with pytest.raises(AmbiguousIdError):
            await v.get_version(conn, definitions, org_id, "abcd0000")


async def test_organisations_are_isolated(db: Database, org_id: str) -> None:
    async with db.transaction() as conn:
        other_org = await ensure_org(conn, "other")
        theirs = await _root(conn, other_org)
        with pytest.raises(NotFoundError):
            await v.get_version(conn, definitions, org_id, theirs.id)
        with pytest.raises(NotFoundError):
            await v.fork(conn, definitions, org_id, theirs.id, content=None, content_hash=None)
        assert await v.list_versions(conn, definitions, org_id) == []
        assert await v.descendants(conn, definitions, org_id, theirs.id) == []


async def test_rubrics_share_the_same_versioning(db: Database, org_id: str) -> None:
    async with db.transaction() as conn:
        root = await v.create_root(
            conn, rubrics, org_id, name="values", content={"values": {}}, content_hash="r0"
        )
        child = await v.fork(conn, rubrics, org_id, root.id, content={"v": 1}, content_hash="r1")
        assert child.version_label == "v1.1"
        assert [x.id for x in await v.ancestors(conn, rubrics, org_id, child.id)] == [root.id]
        with pytest.raises(NotFoundError, match="rubric"):
            await v.get_version(conn, rubrics, org_id, child.id.replace(child.id[:4], "zzzz"))


async def test_ensure_org_is_idempotent(db: Database) -> None:
    async with db.transaction() as conn:
        first = await ensure_org(conn, "lab")
        assert await ensure_org(conn, "lab") == first


async def test_version_ids_are_uuidv7_in_creation_order(db: Database, org_id: str) -> None:
    """Ids are time-ordered like every other id (refs.py's short id is their random tail)."""
    async with db.transaction() as conn:
        root = await _root(conn, org_id)
        child = await v.fork(
            conn, definitions, org_id, root.id, content={"text": "bye"}, content_hash="h1"
        )
    assert [uuid.UUID(i).version for i in (root.id, child.id)] == [7, 7]
    assert root.id < child.id
