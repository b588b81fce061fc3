"""Restoring a workspace ZIP: definition and rubric trees (forks, labels, times), then runs on
those versions; export → import → export is equal; all or nothing; idempotent. Both backends."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml
from sqlalchemy import select, update

from valuerank.db import Database, create_database
from valuerank.db.migrate import upgrade
from valuerank.db.tables import definitions, runs
from valuerank.definitions.service import fork_definition, import_definition, parse_and_check
from valuerank.exchange import ImportFormatError, export_workspace, import_runs
from valuerank.exchange.importing import import_zip_bytes
from valuerank.orgs import ensure_org
from valuerank.rubrics import import_rubric

from .helpers import DEFINITION_MD, RUBRIC_YAML, create_run, make_zip, unzip


async def _workspace(db: Database, org_id: str) -> bytes:
    """Two definition trees (one with forks and a grandchild), a rubric with two versions, two
    runs: one completed, one failed."""
    text = DEFINITION_MD.read_text("utf-8")
    async with db.transaction() as conn:
        run_id = await create_run(conn, org_id)  # root v1 of the demo definition + rubric
        root = await conn.scalar(select(runs.c.definition_id).where(runs.c.id == run_id))
        child = await fork_definition(
            conn, org_id, str(root), definition=parse_and_check(text.replace("small", "big"))
        )
        await fork_definition(conn, org_id, str(root), label="framing-b")
        await fork_definition(
            conn, org_id, child.version.id, definition=parse_and_check(text.replace("small", "x"))
        )
        other = text.replace("name: exp-Demo", "name: exp-Other")
        await import_definition(conn, org_id, other)
        changed = RUBRIC_YAML.read_text("utf-8").replace("Benevolence", "Benevolence_X", 1)
        await import_rubric(conn, org_id, changed, name="values")
        failed = await create_run(conn, org_id)
        await conn.execute(update(runs).where(runs.c.id == failed).values(status="failed"))
        return await export_workspace(conn, org_id)


@pytest.fixture
async def fresh_db(tmp_path: Path) -> AsyncIterator[Database]:
    """A second, empty install (SQLite) to restore into."""
    db = create_database(f"sqlite:///{tmp_path / 'restored.db'}")
    await upgrade(db)
    try:
        yield db
    finally:
        await db.dispose()


async def test_a_restore_into_a_fresh_install_exports_the_same_workspace(
    db: Database, org_id: str, fresh_db: Database, tmp_path: Path
) -> None:
    original = await _workspace(db, org_id)
    path = tmp_path / "workspace.zip"
    path.write_bytes(original)
    async with fresh_db.transaction() as conn:
        target = await ensure_org(conn, "default")
        restored = await import_runs(conn, target, path)
        again = await export_workspace(conn, target)
    assert len(restored) == 2 and all(r.created for r in restored)
    assert unzip(again) == unzip(original)  # every file, ids and times included
    assert again == original  # and the archive itself, byte for byte
    async with fresh_db.transaction() as conn:
        statuses = sorted((await conn.execute(select(runs.c.status))).scalars())
    assert statuses == ["completed", "failed"]


async def test_restoring_again_writes_nothing(
    db: Database, org_id: str, fresh_db: Database
) -> None:
    data = await _workspace(db, org_id)
    async with fresh_db.transaction() as conn:
        target = await ensure_org(conn, "default")
        first = await import_zip_bytes(conn, target, data)
        second = await import_zip_bytes(conn, target, data)
        versions = len((await conn.execute(select(definitions.c.id))).all())
    assert [r.created for r in first] == [True, True]
    assert [r.created for r in second] == [False, False]
    assert [r.id for r in second] == [r.id for r in first]
    assert versions == 5


async def test_into_another_organisation_of_the_same_database_the_trees_are_rebuilt(
    db: Database, org_id: str
) -> None:
    data = await _workspace(db, org_id)
    async with db.transaction() as conn:
        other = await ensure_org(conn, "restored")
        restored = await import_zip_bytes(conn, other, data)
        again = unzip(await export_workspace(conn, other))
    original = unzip(data)
    assert all(r.created for r in restored)

    def shape(files: dict[str, bytes], folder: str) -> list[tuple[object, ...]]:
        versions = yaml.safe_load(files[f"{folder}/lineage.yaml"])["versions"]
        by_id = {v["id"]: v for v in versions}
        return sorted(
            (
                v["name"],
                v["label"],
                by_id[v["parent_id"]]["label"] if v["parent_id"] else None,
                by_id[v["root_id"]]["label"],
                v["content_hash"],
                v["created_at"],
            )
            for v in versions
        )

    for folder in ("definitions", "rubrics"):
        assert shape(again, folder) == shape(original, folder)
        ids_before = {
            v["id"] for v in yaml.safe_load(original[f"{folder}/lineage.yaml"])["versions"]
        }
        ids_after = {v["id"] for v in yaml.safe_load(again[f"{folder}/lineage.yaml"])["versions"]}
        assert not ids_before & ids_after  # the ids are taken: new ones
    # The runs are on the restored versions of their definitions, not on new lineages.
    index = yaml.safe_load(again["workspace.yaml"])["runs"]
    restored_ids = {v["id"] for v in yaml.safe_load(again["definitions/lineage.yaml"])["versions"]}
    assert all(entry["definition_id"] in restored_ids for entry in index)


async def test_a_changed_file_is_refused_and_nothing_is_written(db: Database, org_id: str) -> None:
    files = unzip(await _workspace(db, org_id))
    listed = yaml.safe_load(files["definitions/lineage.yaml"])["versions"]
    target = listed[1]["file"]
    files[target] = files[target].replace(b"engineering firm", b"accounting firm")
    tampered = make_zip(list(files.items()))
    async with db.transaction() as conn:
        other = await ensure_org(conn, "restored")
    with pytest.raises(ImportFormatError, match="does not match the content hash"):
        async with db.transaction() as conn:
            await import_zip_bytes(conn, other, tampered)
    async with db.transaction() as conn:
        assert (
            await conn.execute(select(definitions).where(definitions.c.org_id == other))
        ).first() is None
        assert (await conn.execute(select(runs).where(runs.c.org_id == other))).first() is None


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda h: h.update(format="something-else"), "not a ValueRank workspace"),
        (lambda h: h.update(format_version=99), "format version 99"),
    ],
)
async def test_a_foreign_or_newer_header_is_refused(
    db: Database, org_id: str, edit: object, said: str
) -> None:
    files = unzip(await _workspace(db, org_id))
    header = yaml.safe_load(files["workspace.yaml"])
    edit(header)  # type: ignore[operator]
    files["workspace.yaml"] = yaml.safe_dump(header).encode()
    async with db.transaction() as conn:
        other = await ensure_org(conn, "restored")
    with pytest.raises(ImportFormatError, match=said):
        async with db.transaction() as conn:
            await import_zip_bytes(conn, other, make_zip(list(files.items())))
