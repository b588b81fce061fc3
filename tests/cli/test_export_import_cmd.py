"""`valuerank export …` and `valuerank import run …` against a real database on each backend."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from valuerank.refs import short_id

from .conftest import Invoke, Outcome

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "cli"
FIXTURE_RUN = FIXTURES / "runs" / "2025-03-02.14-05"
DEFINITION_MD = FIXTURES / "definitions" / "exp-Demo_Whistleblower_Loyalty_Honesty.md"


@pytest.fixture
def vr(cli_both: Invoke) -> Invoke:
    """`valuerank ARGS…` on the migrated test database, and asking a server over it."""
    return cli_both


def _ok(outcome: Outcome) -> Any:
    assert outcome.exit_code == 0, outcome.stdout + outcome.stderr
    return outcome.json()


def test_import_export_and_import_again(vr: Invoke, tmp_path: Path) -> None:
    first = _ok(vr("import", "run", str(FIXTURE_RUN), "--json"))
    [run] = first["runs"]
    assert (run["cli_run_id"], run["transcripts"], run["created"]) == ("2025-03-02.14-05", 2, True)

    target = tmp_path / "out" / "run.zip"
    exported = _ok(vr("export", "run", short_id(run["id"]), "-o", str(target), "--json"))
    assert exported["file"] == str(target) and exported["transcripts"] == 2
    with zipfile.ZipFile(target) as archive:
        names = archive.namelist()
        manifest = yaml.safe_load(archive.read("run_manifest.yaml"))
    assert manifest["run_id"] == "2025-03-02.14-05"
    assert "summary.csv" in names and "results.jsonl" in names
    assert not [p for p in target.parent.iterdir() if p.name.startswith(".")]  # no temp left

    again = _ok(vr("import", "run", str(target), "--json"))
    assert again == {"runs": [{**run, "created": False}]}


def test_import_several_runs_in_rich_output(vr: Invoke, tmp_path: Path) -> None:
    for name, run_id in (("a", "2025-03-02.14-05"), ("b", "2025-04-01.08-00")):
        shutil.copytree(FIXTURE_RUN, tmp_path / name)
        manifest = (FIXTURE_RUN / "run_manifest.yaml").read_text()
        manifest = manifest.replace("2025-03-02.14-05", run_id, 1)
        (tmp_path / name / "run_manifest.yaml").write_text(manifest)
    outcome = vr("import", "run", str(tmp_path))
    assert outcome.exit_code == 0, outcome.stderr
    assert "2025-03-02.14-05" in outcome.stdout and "2025-04-01.08-00" in outcome.stdout
    assert outcome.stdout.count("imported") == 2


def test_an_unsafe_archive_exits_1_and_imports_nothing(vr: Invoke, tmp_path: Path) -> None:
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w") as archive:
        archive.writestr("transcripts/ok.md", "x")
        info = zipfile.ZipInfo("placeholder")
        info.filename = "../../escape.md"
        archive.writestr(info, "boom")
    outcome = vr("import", "run", str(bad), "--json")
    assert outcome.exit_code == 1
    assert outcome.json()["code"] == "UNSAFE_ARCHIVE"
    assert "climbs out" in outcome.json()["error"]
    plain = vr("import", "run", str(bad))
    assert plain.exit_code == 1 and "climbs out" in plain.stderr


def test_import_limits_are_options(vr: Invoke, tmp_path: Path) -> None:
    outcome = vr("import", "run", str(FIXTURE_RUN), "--max-files", "1", "--json")
    assert outcome.exit_code == 1
    assert outcome.json()["code"] == "UNSAFE_ARCHIVE"


def test_a_bad_transcript_names_file_and_line(vr: Invoke, tmp_path: Path) -> None:
    shutil.copytree(FIXTURE_RUN, tmp_path / "run")
    (tmp_path / "run" / "transcript.broken.md").write_bytes(b"---\nrun_id: x\n\xff\n---\n")
    outcome = vr("import", "run", str(tmp_path / "run"), "--json")
    assert outcome.exit_code == 1
    assert outcome.json()["code"] == "INVALID_IMPORT"
    assert "transcript.broken.md:3: not UTF-8" in outcome.json()["error"]
    listed = vr("export", "workspace", "-o", str(tmp_path / "ws.zip"), "--json")
    with zipfile.ZipFile(tmp_path / "ws.zip") as archive:
        assert yaml.safe_load(archive.read("workspace.yaml"))["runs"] == []  # nothing imported
    assert listed.exit_code == 0


def test_export_definition_and_workspace(vr: Invoke, tmp_path: Path) -> None:
    stored = vr("definitions", "import", str(DEFINITION_MD), "--json").json()
    child = vr("definitions", "fork", stored["id"], "--json")
    assert child.exit_code == 0, child.stderr
    child_id = child.json()["id"]

    md = tmp_path / "def.md"
    assert _ok(vr("export", "definition", stored["id"], "-o", str(md), "--json"))["bytes"] > 0
    assert md.read_text() == DEFINITION_MD.read_text()

    lineage = tmp_path / "lineage.zip"
    _ok(vr("export", "definition", child_id, "--with-ancestry", "-o", str(lineage), "--json"))
    with zipfile.ZipFile(lineage) as archive:
        assert sorted(archive.namelist()) == [
            "definitions/01-v1.md",
            "definitions/02-v1.1.md",
            "lineage.yaml",
        ]

    _ok(vr("import", "run", str(FIXTURE_RUN), "--json"))
    workspace = tmp_path / "ws.zip"
    result = vr("export", "workspace", "-o", str(workspace))
    assert result.exit_code == 0 and "ws.zip" in result.stdout
    with zipfile.ZipFile(workspace) as archive:
        header = yaml.safe_load(archive.read("workspace.yaml"))
    assert header["definitions"] == 2 and len(header["runs"]) == 1


def test_export_of_an_unknown_run_exits_1(vr: Invoke, tmp_path: Path) -> None:
    outcome = vr("export", "run", "does-not-exist", "-o", str(tmp_path / "x.zip"), "--json")
    assert outcome.exit_code == 1
    assert json.loads(outcome.stdout)["code"] == "NOT_FOUND"
    assert not (tmp_path / "x.zip").exists()


def test_a_workspace_restores_into_another_organisation(
    cli: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vr = cli  # locally: a server's token belongs to one organisation
    _ok(vr("import", "run", str(FIXTURE_RUN), "--json"))
    root = _ok(vr("definitions", "import", str(DEFINITION_MD), "--json"))["id"]
    forked = _ok(vr("definitions", "fork", root, "--label", "owner-view", "--json"))
    archive = tmp_path / "workspace.zip"
    _ok(vr("export", "workspace", "-o", str(archive), "--json"))

    monkeypatch.setenv("VALUERANK_DEFAULT_ORG", "restored")
    restored = _ok(vr("import", "workspace", str(archive), "--json"))
    assert (restored["definitions"], restored["rubrics"], restored["reused_versions"]) == (
        2,
        0,
        0,
    )
    assert [r["created"] for r in restored["runs"]] == [True]
    versions = _ok(vr("definitions", "list", "--json"))
    labels = sorted(v["version_label"] for v in versions)
    assert labels == ["owner-view", "v1"]
    child = next(v for v in versions if v["version_label"] == "owner-view")
    assert child["parent_id"] != forked["parent_id"]  # another organisation: new ids
    lineage = _ok(vr("definitions", "lineage", child["id"], "--json"))
    assert [a["version_label"] for a in lineage["ancestors"]] == ["v1"]
    again = _ok(vr("import", "workspace", str(archive), "--json"))
    assert again["reused_versions"] == 2 and [r["created"] for r in again["runs"]] == [False]
    text = vr("import", "workspace", str(archive))
    assert "already there" in text.stdout
    not_a_workspace = vr("import", "workspace", str(FIXTURE_RUN), "--json")
    assert not_a_workspace.exit_code == 1
    assert not_a_workspace.json()["code"] == "INVALID_IMPORT"


def test_export_and_import_tables(vr: Invoke, tmp_path: Path) -> None:
    [run] = _ok(vr("import", "run", str(FIXTURE_RUN), "--json"))["runs"]
    target = tmp_path / "run.jsonl"
    table = _ok(vr("export", "table", short_id(run["id"]), "-o", str(target), "--json"))
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    assert table == {
        "file": str(target),
        "bytes": target.stat().st_size,
        "id": run["id"],
        "format": "jsonl",
        "rows": len(rows),
        "columns": len(rows[0]),
    }
    assert len(rows) == 2
    odd = vr("export", "table", run["id"], "-o", str(tmp_path / "run.xlsx"), "--json")
    assert odd.exit_code == 1 and odd.json()["code"] == "UNKNOWN_TABLE_FORMAT"

    dilemmas = tmp_path / "dilemmas.csv"
    dilemmas.write_text("id,text,action_a,action_b\ntrolley,Pull it?,pull,wait\n")
    imported = _ok(vr("import", "table", str(dilemmas), "--name", "trolleys", "--json"))
    assert (imported["name"], imported["created"], imported["scenarios"]) == ("trolleys", True, 1)
    again = vr("import", "table", str(dilemmas), "--name", "trolleys")
    assert again.exit_code == 0 and "already imported: nothing written" in again.stdout
    bad = tmp_path / "bad.csv"
    bad.write_text("id,words\nx,y\n")
    refused = vr("import", "table", str(bad), "--json")
    assert refused.exit_code == 1 and refused.json()["code"] == "TABLE_MISSING_COLUMNS"
    assert [d["name"] for d in _ok(vr("definitions", "list", "--json"))] == ["trolleys"]


def test_an_export_that_cannot_be_written_exits_1(vr: Invoke, tmp_path: Path) -> None:
    stored = _ok(vr("definitions", "import", str(DEFINITION_MD), "--json"))
    folder = tmp_path / "out" / "taken"
    folder.mkdir(parents=True)
    out = vr("export", "definition", stored["id"], "-o", str(folder), "--json")
    assert out.exit_code == 1 and out.json()["code"] == "OUTPUT_NOT_WRITTEN"
    assert list(folder.parent.iterdir()) == [folder] and not list(folder.iterdir())


def test_one_transcript_file_is_a_run(vr: Invoke) -> None:
    one = sorted(FIXTURE_RUN.glob("transcript.*.md"))[0]
    [run] = _ok(vr("import", "run", str(one), "--json"))["runs"]
    assert (run["cli_run_id"], run["transcripts"], run["created"]) == ("2025-03-02.14-05", 1, True)
