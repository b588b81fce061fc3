"""Kind detection and `check_file` on every fixture and on the CLI's real files."""

from __future__ import annotations

import json

import pytest
from tests.cli_corpus import Corpus

from valuerank.formats import check_file, detect_kind
from valuerank.formats.detect import kind_from_content, kind_from_name

from .helpers import CLI_FIXTURES, read

FIXTURE_KINDS = {
    "definitions/exp-Demo_Whistleblower_Loyalty_Honesty.md": "definition",
    "definitions/exp-Demo_Lifeboat_Rules.md": "definition",
    "definitions/exp-007.Demo_Whistleblower_Loyalty_Honesty.yaml": "scenarios",
    "scenarios/exp-012.demo.preference.yaml": "scenarios",
    "scenarios/scenarios.legacy.yaml": "scenarios",
    "runs/2025-03-02.14-05/run_manifest.yaml": "run_manifest",
    "runs/2025-03-02.14-05/"
    "transcript.scenario_012_pref_neutral.openai:gpt-4.1.static.2025-03-02.14-05.md": "transcript",
    "runs/2025-03-02.14-05/transcript.scenario_012_pref_neutral.anthropic:claude-3.5-haiku"
    ".static.2025-03-02.14-05.md": "transcript",
    "config/values_rubric.yaml": "rubric",
    # the corpus in the layout of the CLI's files (tests/cli_corpus.py; test_corpus_files)
    "corpus/config/values_rubric.yaml": "rubric",
    "corpus/definitions/exp-Overdue_Rent_Compassion_FairProcess_Economics.new.md": "definition",
    "corpus/definitions/exp-021.Overdue_Rent_Compassion_FairProcess_Economics.new.yaml": (
        "scenarios"
    ),
    "corpus/scenarios/exp-021.festival.preference.yaml": "scenarios",
    **{
        f"corpus/transcripts/transcript.scenario_021.{model}.static.2025-06-09.08-45.md": (
            "transcript"
        )
        for model in ("anthropic:claude-haiku-4-5", "openai:gpt-4.1-mini", "xai:grok-4")
    },
}


def test_every_fixture_is_listed() -> None:
    files = {
        str(p.relative_to(CLI_FIXTURES))
        for p in CLI_FIXTURES.rglob("*")
        if p.suffix in (".md", ".yaml") and p.name != "README.md"
    }
    assert files == set(FIXTURE_KINDS)


@pytest.mark.parametrize(("relative", "kind"), sorted(FIXTURE_KINDS.items()))
def test_fixture_kinds_by_name_and_by_content(relative: str, kind: str) -> None:
    path = CLI_FIXTURES / relative
    text = read(path)
    assert kind_from_name(path.name) == kind
    assert kind_from_content(text) == kind
    assert detect_kind("upload.txt", text) == kind
    report = check_file(path.name, text)
    assert report.ok, report.render()
    assert report.kind == kind
    json.dumps(report.to_dict())


def test_summaries() -> None:
    report = check_file(
        "exp-Demo_Lifeboat_Rules.md",
        read(CLI_FIXTURES / "definitions" / "exp-Demo_Lifeboat_Rules.md"),
    )
    assert report.summary["dimensions"] == 3
    assert report.summary["combinations"] == 12
    assert report.summary["matching_rules"] is True
    legacy = check_file(
        "scenarios.legacy.yaml", read(CLI_FIXTURES / "scenarios" / "scenarios.legacy.yaml")
    )
    assert legacy.summary["layout"] == "legacy" and legacy.summary["scenarios"] == 2
    rubric = check_file("values_rubric.yaml", read(CLI_FIXTURES / "config" / "values_rubric.yaml"))
    assert rubric.summary["values"] == 4
    assert len(rubric.warnings) == 4
    rendered = rubric.to_dict()
    assert rendered["warnings"][0].startswith("values_rubric.yaml:63: warning:")
    assert rendered["error"] is None


def test_corpus_files(cli_corpus: Corpus) -> None:
    expected = {
        "definitions": {".md": "definition", ".yaml": "scenarios"},
        "scenarios": {".yaml": "scenarios"},
        "transcripts": {".md": "transcript"},
        "config": {".yaml": "rubric"},
    }
    seen = 0
    for folder, kinds in expected.items():
        for path in sorted(cli_corpus.path(folder).iterdir()):
            text = read(path)
            kind = kinds[path.suffix]
            assert detect_kind(path.name, text) == kind
            assert kind_from_content(text) == kind
            report = check_file(path.name, text)
            assert report.ok, report.render()
            seen += 1
    assert seen == 7


def test_unknown_file() -> None:
    report = check_file("notes.txt", "hello\n")
    assert not report.ok and report.kind is None
    assert report.error is not None and "exp-*.md" in (report.error.hint or "")
    assert report.to_dict()["error"].startswith("notes.txt: cannot tell")


def test_invalid_file_reports_the_error_and_the_line() -> None:
    report = check_file("exp-bad.md", "---\nname: x\n---\n\n# Template\n\nHi [Who].\n")
    assert not report.ok and report.kind == "definition"
    assert report.error is not None and report.error.line == 7
    assert report.render()[-1].startswith("exp-bad.md:7: template placeholder [Who]")


def test_transcript_name_disagreeing_with_front_matter_is_a_warning() -> None:
    path = next((CLI_FIXTURES / "runs").rglob("transcript.*gpt-4.1*.md"))
    report = check_file("transcript.other_id.openai:gpt-4.1.static.2025-03-02.14-05.md", read(path))
    assert report.ok
    assert "file name says scenario `other_id`" in report.warnings[0].message


def test_explicit_kind_wins() -> None:
    report = check_file("whatever.yaml", "run_id: r\n", kind="run_manifest")
    assert report.ok and report.summary == {"run_id": "r", "models": 0, "scenarios": 0}
