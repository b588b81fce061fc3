"""Export and import over HTTP on SQLite and PostgreSQL against the real server: the CLI's
bytes, downloads with their names, the original CLI's real files imported, a workspace moved
to another organisation; upload limits, broken and unsafe files (nothing written), roles."""

from __future__ import annotations

import io
import zipfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy import func, select
from tests.cli_corpus import Corpus

from valuerank.db import Database
from valuerank.db.tables import definitions, rubrics, runs
from valuerank.definitions.service import export_markdown
from valuerank.exchange import export_run
from valuerank.orgs import ensure_org
from valuerank.refs import short_id


def _zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _folder_zip(root: Path) -> bytes:
    """The CLI's folder as a user would zip it (under a top folder of its own)."""
    files = {
        f"valuerank-cli/{p.relative_to(root).as_posix()}": p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }
    return _zip(files)


async def _counts(db: Database, org_id: str) -> tuple[int, int, int]:
    async with db.transaction() as conn:
        return tuple(  # type: ignore[return-value]
            [
                int(await conn.scalar(select(func.count()).where(t.c.org_id == org_id)) or 0)
                for t in (runs, definitions, rubrics)
            ]
        )


async def test_exports_are_the_clis_bytes_as_downloads(
    live: Any, db: Database, org_id: str, make_run: Any, assert_error: Any
) -> None:
    run = await make_run(org_id, decisions={"scripted:utilitarian": [4, 5, None]})
    async with db.transaction() as conn:
        expected_zip = await export_run(conn, org_id, run.id)
        expected_md = await export_markdown(conn, org_id, run.definition_id)
    async with live.client_for("default", "viewer") as viewer:
        exported = await viewer.post(f"/api/export/run/{short_id(run.id)}")
        assert exported.status_code == 200, exported.text
        assert exported.headers["content-type"] == "application/zip"
        disposition = exported.headers["content-disposition"]
        assert disposition == f'attachment; filename="run-{run.cli_run_id}.zip"'
        assert exported.content == expected_zip
        with zipfile.ZipFile(io.BytesIO(exported.content)) as archive:
            names = archive.namelist()
        assert "run_manifest.yaml" in names and any(n.startswith("transcripts/") for n in names)

        md = await viewer.post(f"/api/export/definition/{run.definition_id}")
        assert md.status_code == 200 and md.headers["content-type"].startswith("text/markdown")
        assert md.text == expected_md
        assert md.headers["content-disposition"] == (
            'attachment; filename="exp-demo-whistleblower.md"'
        )
        lineage = await viewer.post(
            f"/api/export/definition/{run.definition_id}", params={"with_ancestry": True}
        )
        assert lineage.headers["content-type"] == "application/zip"
        with zipfile.ZipFile(io.BytesIO(lineage.content)) as archive:
            index = yaml.safe_load(archive.read("lineage.yaml"))
        assert [v["label"] for v in index["versions"]] == ["v1"]

        workspace = await viewer.post("/api/export/workspace")
        assert workspace.headers["content-disposition"] == (
            'attachment; filename="valuerank-workspace.zip"'
        )
        with zipfile.ZipFile(io.BytesIO(workspace.content)) as archive:
            assert "workspace.yaml" in archive.namelist()

    async with db.transaction() as conn:
        other = await ensure_org(conn, "elsewhere")
    foreign = await make_run(other)
    async with live.client() as client:
        for response, code in (
            (await client.post(f"/api/export/run/{foreign.id}"), "NOT_FOUND"),
            (await client.post("/api/export/run/nope"), "NOT_FOUND"),
            (
                await client.post(f"/api/export/definition/{foreign.definition_id}"),
                "DEFINITION_NOT_FOUND",
            ),
        ):
            assert_error(response, 404, code)


async def test_import_the_clis_files(
    live: Any, db: Database, org_id: str, cli_corpus: Corpus, assert_error: Any
) -> None:
    root = cli_corpus.root
    async with live.client_for("default", "member") as member:
        folder = await member.post(
            "/api/import",
            params={"filename": "valuerank-cli.zip"},
            content=_folder_zip(root),
            headers={"Content-Type": "application/zip"},
        )
        assert folder.status_code == 201, folder.text
        data = folder.json()["data"]
        assert data["kind"] == "runs" and data["created"] is True
        [imported] = data["runs"]
        assert imported["cli_run_id"] == cli_corpus.run_id and imported["transcripts"] == 3
        again = await member.post(
            "/api/import", files={"file": ("valuerank-cli.zip", _folder_zip(root))}
        )
        assert again.status_code == 200 and again.json()["data"]["created"] is False

        [md] = sorted((root / "definitions").glob("exp-*.md"))
        definition = await member.post("/api/import", files={"file": (md.name, md.read_bytes())})
        assert definition.status_code == 201, definition.text
        assert definition.json()["data"]["kind"] == "definition"
        rubric_path = root / "config" / "values_rubric.yaml"
        rubric = await member.post(
            "/api/import", params={"filename": rubric_path.name}, content=rubric_path.read_bytes()
        )
        assert rubric.status_code == 201, rubric.text
        assert rubric.json()["data"]["rubric"]["name"] == "values_rubric"

    async with live.client_for("third", "member") as stranger:
        [one] = sorted((root / "transcripts").glob("transcript.*.md"))[:1]
        single = await stranger.post(
            "/api/import", params={"filename": one.name}, content=one.read_bytes()
        )
        assert single.status_code == 201, single.text
        assert single.json()["data"]["runs"][0]["transcripts"] == 1
        nameless = await stranger.post("/api/import", content=one.read_bytes())
        assert_error(nameless, 422, "INVALID_IMPORT")
    assert await _counts(db, org_id) == (1, 1, 1)


async def test_a_workspace_moves_to_another_organisation(
    live: Any, db: Database, org_id: str, make_run: Any
) -> None:
    await make_run(org_id, decisions={"scripted:utilitarian": [3, 4]})
    async with live.client() as client:
        data = (await client.post("/api/export/workspace")).content
    async with live.client_for("moved", "admin") as other:
        restored = await other.post(
            "/api/import", files={"file": ("valuerank-workspace.zip", data, "application/zip")}
        )
        assert restored.status_code == 201, restored.text
        body = restored.json()["data"]
        assert body["kind"] == "workspace" and body["definitions"] == 1
        assert [r["transcripts"] for r in body["runs"]] == [2]
        again = await other.post("/api/import", files={"file": ("ws.zip", data)})
        assert again.status_code == 200 and again.json()["data"]["created"] is False
        org = other.account.org_id
    assert await _counts(db, org) == (1, 1, 0)


async def test_broken_unsafe_and_oversized_uploads_write_nothing(
    live: Any, live_server: Any, db: Database, org_id: str, assert_error: Any
) -> None:
    transcript = b"---\ntarget_model: x\n---\n## Dialogue\n"
    async with live.client() as client:
        cases = [
            (b"PK\x03\x04 not really a zip", 422, "INVALID_IMPORT"),
            (b"\xff\xfe\x00garbage", 422, "INVALID_IMPORT"),
            (b"just some words", 422, "INVALID_IMPORT"),
            (_zip({"../escape/transcript.a.b.md": transcript}), 400, "UNSAFE_ARCHIVE"),
            (_zip({"notes.txt": b"nothing to import"}), 422, "INVALID_IMPORT"),
            (b"---\nname: exp-x\n---\n\n# Template\n\n[Nope]\n", 422, "INVALID_FILE"),
        ]
        for content, status, code in cases:
            response = await client.post("/api/import", content=content)
            assert_error(response, status, code)
        assert_error(await client.post("/api/import"), 400, "INVALID_UPLOAD")
        # Uploads may pass the 1 MiB of the JSON routes (this one is refused for its content).
        big = b"x" * (2 * 1024 * 1024)
        assert_error(await client.post("/api/import", content=big), 422, "INVALID_IMPORT")
        assert_error(await client.post("/api/definitions", content=big), 413, "PAYLOAD_TOO_LARGE")
    assert await _counts(db, org_id) == (0, 0, 0)

    async with live_server(max_upload_bytes=4096) as small, small.client() as client:
        declared = await client.post("/api/import", content=b"y" * 5000)
        assert_error(declared, 413, "PAYLOAD_TOO_LARGE")

        async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it comes
            for _ in range(5):  # past the limit with the last chunk, as the client ends
                yield b"z" * 1000

        streamed = await client.post("/api/import", content=chunks())
        assert_error(streamed, 413, "PAYLOAD_TOO_LARGE")
        fits = await client.post("/api/import", content=b"y" * 3000)
        assert_error(fits, 422, "INVALID_IMPORT")
    assert await _counts(db, org_id) == (0, 0, 0)


async def test_only_members_import(live: Any, assert_error: Any) -> None:
    async with live.client_for("default", "viewer") as viewer:
        refused = await viewer.post("/api/import", content=b"anything")
        assert_error(refused, 403, "FORBIDDEN")
