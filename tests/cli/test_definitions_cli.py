"""The definitions/scenarios/rubrics commands end to end, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.cli_corpus import Corpus

from valuerank.db import Database
from valuerank.formats import parse_definition
from valuerank.refs import short_id

from .conftest import Invoke

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CAFE = EXAMPLES / "exp-cafe-mandate.md"
CAFE_OWNER = EXAMPLES / "exp-cafe-mandate.owner.md"


def _import(cli: Invoke, path: Path = CAFE) -> dict[str, Any]:
    out = cli("definitions", "import", str(path), "--json")
    assert out.exit_code == 0, out.stdout + out.stderr
    return out.json()  # type: ignore[no-any-return]


def test_import_is_idempotent_and_listed(cli_both: Invoke) -> None:
    cli = cli_both
    first = _import(cli)
    assert first["name"] == "exp-cafe-mandate"
    assert first["version_label"] == "v1"
    assert first["created"] is True
    again = _import(cli)
    assert again["id"] == first["id"] and again["created"] is False
    listed = cli("definitions", "list", "--json").json()
    assert [d["id"] for d in listed] == [first["id"]]
    shown = cli("definitions", "show", short_id(first["id"]), "--json").json()
    assert shown["id"] == first["id"]
    assert [d["name"] for d in shown["content"]["dimensions"]] == [
        "Risk",
        "Livelihood",
        "Enforcement",
    ]
    # Scores <= 0 are dropped, as the original CLI does.
    assert [lv["score"] for lv in shown["content"]["dimensions"][2]["levels"]] == [1, 2]
    assert shown["matching_rules"]["machine"] == ["Livelihood.score <= Risk.score + 1"]
    assert len(shown["matching_rules"]["prose"]) == 1


def test_fork_lineage_and_diff(cli_both: Invoke) -> None:
    cli = cli_both
    root = _import(cli)
    copy = cli("definitions", "fork", root["id"], "--json").json()
    assert copy["version_label"] == "v1.1" and copy["parent_id"] == root["id"]
    owner = cli("definitions", "fork", copy["id"], "--from-file", str(CAFE_OWNER), "--json").json()
    assert owner["version_label"] == "v1.1.1"
    named = cli("definitions", "fork", root["id"], "--label", "owner-frame", "--json").json()
    assert named["version_label"] == "owner-frame"
    clash = cli("definitions", "fork", root["id"], "--label", "owner-frame", "--json")
    assert clash.exit_code == 1 and clash.json()["code"] == "CONFLICT"

    lineage = cli("definitions", "lineage", owner["id"], "--json").json()
    assert [a["id"] for a in lineage["ancestors"]] == [root["id"], copy["id"]]
    assert lineage["descendants"] == []
    root_lineage = cli("definitions", "lineage", root["id"], "--json").json()
    assert root_lineage["ancestors"] == []
    assert {d["id"] for d in root_lineage["descendants"]} == {
        copy["id"],
        owner["id"],
        named["id"],
    }

    tree = cli("definitions", "tree", owner["id"], "--json").json()
    assert tree["id"] == root["id"]
    assert [c["version_label"] for c in tree["children"]] == ["owner-frame", "v1.1"]

    diff = cli("definitions", "diff", root["id"], owner["id"], "--json").json()
    assert [d["name"] for d in diff["dimensions"]["added"]] == ["Loyalty"]
    assert diff["is_empty"] is False
    assert diff["template"] is not None
    text = cli("definitions", "diff", root["id"], owner["id"])
    assert text.exit_code == 0 and "Loyalty" in text.stdout
    same = cli("definitions", "diff", root["id"], copy["id"])
    assert "no changes" in same.stdout


def test_export_round_trips(cli_both: Invoke, tmp_path: Path) -> None:
    cli = cli_both
    root = _import(cli)
    target = tmp_path / "out" / "exported.md"
    out = cli("definitions", "export", root["id"], "-o", str(target))
    assert out.exit_code == 0
    assert parse_definition(target.read_text("utf-8")) == parse_definition(CAFE.read_text("utf-8"))
    stdout = cli("definitions", "export", root["id"])
    assert stdout.stdout == target.read_text("utf-8")


def test_expand_and_nested_samples(cli_both: Invoke, tmp_path: Path) -> None:
    cli = cli_both
    root = _import(cli)
    target = tmp_path / "exp-001.cafe.yaml"
    full = cli("scenarios", "expand", root["id"], "-o", str(target), "--json").json()
    # 3 risks x 3 livelihoods x 2 enforcement levels, less the rule "Livelihood <= Risk + 1"
    # which drops (risk 1, closure): 18 - 2 = 16.
    assert full["total"] == 16 and full["selected"] == 16
    data = yaml.safe_load(target.read_text("utf-8"))
    assert list(data) == ["preamble", "scenarios"]
    assert list(data["scenarios"]) == full["scenario_ids"]
    first = data["scenarios"]["scenario_001_Risk1_Livelihood1_Enforcement1"]
    assert first["subject"] == "minor risk, small loss, no fines"
    assert "because a mild seasonal cold is going around." in first["body"]

    def ids(pct: str) -> list[str]:
        out = cli(
            "scenarios",
            "expand",
            root["id"],
            "--sample-percentage",
            pct,
            "--sample-seed",
            "42",
            "--json",
        )
        assert out.exit_code == 0, out.stdout
        return out.json()["scenario_ids"]  # type: ignore[no-any-return]

    ten, fifty, hundred = ids("10"), ids("50"), ids("100")
    assert (len(ten), len(fifty), len(hundred)) == (1, 8, 16)
    assert set(ten) <= set(fifty) <= set(hundred)
    assert ids("50") == fifty  # same seed, same sample

    every = cli("scenarios", "expand", root["id"], "--mode", "all", "--json").json()
    assert every["total"] > full["total"]  # levels with several options multiply
    stdout = cli(
        "scenarios", "expand", root["id"], "--sample-percentage", "10", "--sample-seed", "42"
    )
    assert list(yaml.safe_load(stdout.stdout)["scenarios"]) == ten


BAD_DEFINITIONS = {
    "no-template": (
        "---\nname: x\n---\n\n# Preamble\n\nHi\n\n# Dimensions\n\n## A\n\n"
        "| Score | Label | Options |\n|---|---|---|\n| 1 | a | a |\n",
        "Template",
    ),
    "no-score-column": (
        "---\nname: x\n---\n\n# Template\n\n[A]\n\n# Dimensions\n\n## A\n\n"
        "| Level | Label | Options |\n|---|---|---|\n| 1 | a | a |\n",
        "Score",
    ),
    "duplicate-dimension": (
        "---\nname: x\n---\n\n# Template\n\n[A]\n\n# Dimensions\n\n## A\n\n"
        "| Score | Label | Options |\n|---|---|---|\n| 1 | a | a |\n\n## a\n\n"
        "| Score | Label | Options |\n|---|---|---|\n| 1 | b | b |\n",
        "duplicate",
    ),
    "placeholder-without-dimension": (
        "---\nname: x\n---\n\n# Template\n\n[A] and [Missing]\n\n# Dimensions\n\n## A\n\n"
        "| Score | Label | Options |\n|---|---|---|\n| 1 | a | a |\n",
        "Missing",
    ),
    "non-numeric-score": (
        "---\nname: x\n---\n\n# Template\n\n[A]\n\n# Dimensions\n\n## A\n\n"
        "| Score | Label | Options |\n|---|---|---|\n| high | a | a |\n",
        "high",
    ),
    "rule-unknown-dimension": (
        "---\nname: x\n---\n\n# Template\n\n[A]\n\n# Dimensions\n\n## A\n\n"
        "| Score | Label | Options |\n|---|---|---|\n| 1 | a | a |\n\n"
        "# Matching Rules\n\nA.score >= Severity.score\n",
        "Severity",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_DEFINITIONS))
def test_bad_definitions_are_refused_and_nothing_is_written(
    cli: Invoke, tmp_path: Path, case: str
) -> None:
    text, needle = BAD_DEFINITIONS[case]
    path = tmp_path / f"exp-{case}.md"
    path.write_text(text, "utf-8")
    out = cli("definitions", "import", str(path))
    assert out.exit_code == 1
    assert needle in out.stderr
    assert re.search(re.escape(str(path)) + r":\d+(:\d+)?: ", out.stderr), out.stderr  # file:line
    as_json = cli("definitions", "import", str(path), "--json")
    assert as_json.exit_code == 1 and as_json.json()["success"] is False
    assert cli("definitions", "list", "--json").json() == []

    root = _import(cli)
    fork = cli("definitions", "fork", root["id"], "--from-file", str(path))
    assert fork.exit_code == 1
    assert len(cli("definitions", "list", "--json").json()) == 1


def test_rule_errors_name_the_file_line(cli_both: Invoke, tmp_path: Path) -> None:
    cli = cli_both
    text, _ = BAD_DEFINITIONS["rule-unknown-dimension"]
    path = tmp_path / "exp-rule.md"
    path.write_text(text, "utf-8")
    out = cli("definitions", "import", str(path))
    rule_line = text.splitlines().index("A.score >= Severity.score") + 1
    assert f"{path}:{rule_line}:12: " in out.stderr


def test_unknown_ids_and_missing_files(cli_both: Invoke, tmp_path: Path) -> None:
    cli = cli_both
    unknown: list[tuple[str, ...]] = [
        ("definitions", "show", "0000dead"),
        ("definitions", "fork", "0000dead"),
        ("definitions", "lineage", "0000dead"),
        ("definitions", "export", "0000dead"),
        ("scenarios", "expand", "0000dead"),
    ]
    for args in unknown:
        out = cli(*args, "--json") if args[1] != "export" else cli(*args)
        assert out.exit_code == 1, args
        if args[1] != "export":
            assert out.json()["code"] == "DEFINITION_NOT_FOUND"
    assert cli("definitions", "list", "--json").json() == []
    missing = cli("definitions", "import", str(tmp_path / "nope.md"))
    assert missing.exit_code == 1 and "nope.md" in missing.stderr


def test_rubrics_are_versioned(cli_both: Invoke, tmp_path: Path) -> None:
    cli = cli_both
    path = tmp_path / "values_rubric.yaml"
    path.write_text((EXAMPLES / "values_rubric.yaml").read_text("utf-8"), "utf-8")
    first = cli("rubrics", "import", str(path), "--json").json()
    assert first["version_label"] == "v1" and first["created"] is True
    assert "Physical_Safety" in first["values"]
    assert cli("rubrics", "import", str(path), "--json").json()["created"] is False
    path.write_text(path.read_text("utf-8").replace("Keeping people safe", "Keeping all safe"))
    second = cli("rubrics", "import", str(path), "--json").json()
    assert second["version_label"] == "v1.1" and second["name"] == first["name"]
    assert len(cli("rubrics", "list", "--json").json()) == 2

    broken = tmp_path / "broken.yaml"
    broken.write_text("values: [unclosed\n", "utf-8")
    out = cli("rubrics", "import", str(broken))
    assert out.exit_code == 1 and "broken.yaml" in out.stderr
    assert len(cli("rubrics", "list", "--json").json()) == 2


def test_db_upgrade(raw_cli: Invoke) -> None:
    cli = raw_cli
    first = cli("db", "upgrade", "--json").json()
    assert first["from"] is None and first["changed"] is True
    again = cli("db", "upgrade", "--json").json()
    assert again["changed"] is False and again["to"] == first["to"]
    assert cli("db", "current", "--json").json()["current"] == first["to"]


def test_formats_check(cli_both: Invoke, tmp_path: Path) -> None:
    cli = cli_both  # a local file only: with a server set, still no database
    ok = cli("formats", "check", str(EXAMPLES), "--json")
    assert ok.exit_code == 0, ok.stdout
    kinds = {Path(f["path"]).name: f["kind"] for f in ok.json()["files"]}
    assert kinds["exp-cafe-mandate.md"] == "definition"
    assert kinds["values_rubric.yaml"] == "rubric"
    bad = tmp_path / "exp-bad.md"
    bad.write_text(BAD_DEFINITIONS["no-template"][0], "utf-8")
    out = cli("formats", "check", str(bad), str(CAFE), "--json")
    assert out.exit_code == 1
    assert out.json()["invalid"] == 1 and out.json()["valid"] == 1


def test_expanding_the_corpus_definition_equals_the_cli_output(
    cli: Invoke, cli_corpus: Corpus, tmp_path: Path
) -> None:
    md = cli_corpus.path("definitions", cli_corpus.definition)
    expected_path = cli_corpus.path("definitions", cli_corpus.expansion)
    created = _import(cli, md)
    target = tmp_path / "expanded.yaml"
    out = cli("scenarios", "expand", created["id"], "-o", str(target), "--json")
    assert out.json()["total"] == cli_corpus.scenario_count
    assert yaml.safe_load(target.read_text("utf-8")) == yaml.safe_load(
        expected_path.read_text("utf-8")
    )


def test_the_text_output_of_each_command(cli_both: Invoke, tmp_path: Path) -> None:
    cli = cli_both
    root = _import(cli)
    child = cli("definitions", "fork", root["id"], "--from-file", str(CAFE_OWNER), "--json")
    assert child.exit_code == 0, child.stdout + child.stderr
    listed = cli("definitions", "list")
    assert short_id(root["id"]) in listed.stdout and "Loyalty" in listed.stdout
    shown = cli("definitions", "show", root["id"])
    assert "exp-cafe-mandate" in shown.stdout and "Enforcement" in shown.stdout
    assert "rule: Livelihood.score <= Risk.score + 1" in shown.stdout
    lineage = cli("definitions", "lineage", child.json()["id"])
    assert "ancestry: v1  →  v1.1" in lineage.stdout and "0 descendant(s)" in lineage.stdout
    tree = cli("definitions", "tree", root["id"])
    assert "v1.1" in tree.stdout and child.json()["id"] in tree.stdout
    imported = cli("definitions", "import", str(CAFE))
    assert "already stored as" in imported.stdout

    rubric = tmp_path / "values_rubric.yaml"
    rubric.write_text((EXAMPLES / "values_rubric.yaml").read_text("utf-8"), "utf-8")
    stored = cli("rubrics", "import", str(rubric))
    assert stored.exit_code == 0 and "imported rubric" in stored.stdout
    first = cli("rubrics", "list", "--json").json()[0]
    assert "Physical_Safety" in first["values"]
    assert first["version_label"] in cli("rubrics", "list").stdout
    shown_rubric = cli("rubrics", "show", first["id"], "--json").json()
    assert shown_rubric["source_file"] == "values_rubric.yaml"
    assert "Physical_Safety" in shown_rubric["content"]["values"]
    assert "Physical_Safety" in cli("rubrics", "show", first["id"]).stdout


async def test_another_organisations_definition_is_not_found(
    cli_both: Invoke, db: Database
) -> None:
    from valuerank.definitions import service
    from valuerank.orgs import ensure_org

    async with db.transaction() as conn:
        other = await ensure_org(conn, "elsewhere")
        stored, _ = await service.import_definition(conn, other, CAFE.read_text("utf-8"))
    # In a thread: the command runs its own event loop, as in a shell.
    for args in (("definitions", "show"), ("definitions", "tree"), ("scenarios", "expand")):
        out = await asyncio.to_thread(cli_both, *args, stored.version.id, "--json")
        assert out.exit_code == 1 and out.json()["code"] == "DEFINITION_NOT_FOUND", args
    out = await asyncio.to_thread(cli_both, "definitions", "export", stored.version.id)
    assert out.exit_code == 1 and "no definition with id" in out.stderr
