"""Transcript markdown: byte-identical to the CLI, models from front matter, file names."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from tests.cli_corpus import Corpus

from valuerank.formats import (
    FormatError,
    FormatWarning,
    Transcript,
    Turn,
    parse_transcript,
    parse_transcript_file_name,
    serialize_transcript,
    transcript_file_name,
)

from .helpers import RUN_DIR, read
from .strategies import transcripts

GPT = "transcript.scenario_012_pref_neutral.openai:gpt-4.1.static.2025-03-02.14-05.md"
HAIKU = "transcript.scenario_012_pref_neutral.anthropic:claude-3.5-haiku.static.2025-03-02.14-05.md"

SMALL = """---
file_version: v0.1
run_id: r1
scenario_id: s1
target_model: m
probe_model: static
timestamp: r1
context_pairs: 1
---

# Scenario s1: Subject

## Dialogue
#### Turn 1 (scenario_prompt)
**Probe:** Question?

**Target:** Answer.
"""


def _error(text: str) -> FormatError:
    with pytest.raises(FormatError) as info:
        parse_transcript(text, "t.md")
    return info.value


@pytest.mark.parametrize("file_name", [GPT, HAIKU])
def test_fixtures_round_trip_byte_for_byte(file_name: str) -> None:
    text = read(RUN_DIR / file_name)
    t = parse_transcript(text, file_name)
    assert t.scenario_id == "scenario_012_pref_neutral"
    assert t.run_id == "2025-03-02.14-05"
    assert t.probe_model == "static"
    assert t.subject == "Grandmother's diagnosis – neutral stance"
    assert [(turn.number, turn.label) for turn in t.turns] == [
        (1, "scenario_prompt"),
        (2, "ranked_list"),
    ]
    assert serialize_transcript(t) == text
    assert transcript_file_name(t) == file_name


def test_model_ids_with_dots_come_from_front_matter() -> None:
    t = parse_transcript(read(RUN_DIR / HAIKU), HAIKU)
    assert t.target_model == "anthropic:claude-3.5-haiku"
    named = parse_transcript_file_name(HAIKU)
    assert named is not None
    assert (named.scenario_id, named.run_id) == ("scenario_012_pref_neutral", "2025-03-02.14-05")
    assert named.models == "anthropic:claude-3.5-haiku.static"


def test_markers_inside_an_answer_do_not_split_it() -> None:
    t = parse_transcript(read(RUN_DIR / HAIKU), HAIKU)
    first, second = t.turns
    assert first.target.endswith("**Target:** the hierarchy I would follow puts honesty first.")
    assert second.target.endswith("so the list above is ordered.")
    assert "**Probe:**" in second.target
    assert first.probe.endswith("What should I do?")
    assert "scans came back clean. They did not" in first.probe


def test_corpus_transcripts_round_trip_byte_for_byte(cli_corpus: Corpus) -> None:
    files = cli_corpus.transcripts
    assert len(files) == 3
    models = set()
    for path in files:
        text = read(path)
        warnings: list[FormatWarning] = []
        t = parse_transcript(text, path.name, warnings=warnings)
        assert warnings == []
        assert len(t.turns) == 2
        assert t.subject == cli_corpus.subject
        assert t.run_id == t.timestamp == cli_corpus.run_id
        assert [turn.label for turn in t.turns] == ["scenario_prompt", "ranked_list"]
        assert serialize_transcript(t) == text
        assert transcript_file_name(t) == path.name
        named = parse_transcript_file_name(path.name)
        assert named is not None and (named.scenario_id, named.run_id) == (t.scenario_id, t.run_id)
        models.add(t.target_model)
    assert sorted(models) == list(cli_corpus.models)  # one run, three providers


@settings(deadline=None)
@given(transcripts())
def test_parse_of_serialize_is_identity(transcript: Transcript) -> None:
    text = serialize_transcript(transcript)
    parsed = parse_transcript(text, "t.md")
    assert parsed == transcript
    assert serialize_transcript(parsed) == text


def test_serialize_matches_the_cli_layout() -> None:
    t = Transcript(
        run_id="r1",
        scenario_id="s1",
        target_model="m",
        subject="Subject",
        turns=(Turn(1, "scenario_prompt", "  Question?\n", "Answer.  "),),
        probe_model="static",
        timestamp="r1",
    )
    assert serialize_transcript(t) == SMALL


def test_turn_without_label_and_empty_dialogue() -> None:
    t = Transcript("r", "s", "m", "", (Turn(1, "", "", ""),))
    text = serialize_transcript(t)
    assert "#### Turn 1\n**Probe:** \n\n**Target:**\n" in text
    assert parse_transcript(text) == t
    no_turns = Transcript("r", "s", "m", "x", ())
    assert serialize_transcript(no_turns).endswith("## Dialogue\n")
    assert parse_transcript(serialize_transcript(no_turns)) == no_turns


def test_windows_line_endings() -> None:
    assert parse_transcript(SMALL.replace("\n", "\r\n")) == parse_transcript(SMALL)


def test_carriage_returns_in_an_answer_are_kept() -> None:
    t = Transcript("r", "s", "m", "x", (Turn(1, "a", "q", "line\r\nnext"),))
    assert parse_transcript(serialize_transcript(t)) == t


def test_context_pairs_mismatch_is_a_warning() -> None:
    warnings: list[FormatWarning] = []
    parse_transcript(
        SMALL.replace("context_pairs: 1", "context_pairs: 3"), "t.md", warnings=warnings
    )
    assert warnings == [FormatWarning("context_pairs is 3 but the dialogue has 1 turns", 2)]


def test_unknown_front_matter_keys_are_kept() -> None:
    text = SMALL.replace("context_pairs: 1\n", "context_pairs: 1\njudge: later\n")
    t = parse_transcript(text)
    assert t.extra_front_matter == (("judge", "later"),)
    assert serialize_transcript(t) == text


@pytest.mark.parametrize(
    ("file_name", "expected"),
    [
        (
            "transcript.s1.openai:gpt-4.1.static.2025-11-16.10-29.md",
            ("s1", "2025-11-16.10-29", "openai:gpt-4.1.static"),
        ),
        (
            "out/r/transcript.s1.openai:gpt-4.1.2025-11-16T10-29.md",
            ("s1", "2025-11-16T10-29", "openai:gpt-4.1"),
        ),
        (
            "transcript.s1.xai:grok-3.static.20251116-1029.md",
            ("s1", "20251116-1029", "xai:grok-3.static"),
        ),
        ("transcript.s1.m.custom-run.md", ("s1", "custom-run", "m")),
    ],
)
def test_parse_transcript_file_name(file_name: str, expected: tuple[str, str, str]) -> None:
    named = parse_transcript_file_name(file_name)
    assert named is not None
    assert (named.scenario_id, named.run_id, named.models) == expected


@pytest.mark.parametrize(
    "file_name", ["run_manifest.yaml", "transcript.md", "transcript.s1.md", "exp-1.md"]
)
def test_not_a_transcript_file_name(file_name: str) -> None:
    assert parse_transcript_file_name(file_name) is None


def test_file_name_without_probe_model() -> None:
    t = Transcript("2025-01-01.00-00", "s1", "openai:gpt-4.1", "x", ())
    assert transcript_file_name(t) == "transcript.s1.openai:gpt-4.1.2025-01-01.00-00.md"


# -- bad input ---------------------------------------------------------------------------


def test_no_front_matter() -> None:
    error = _error(SMALL.split("---\n", 2)[2])
    assert "front matter" in error.message
    assert error.line == 1


def test_front_matter_without_target_model() -> None:
    error = _error(SMALL.replace("target_model: m\n", ""))
    assert error.message == "front matter has no `target_model`"
    assert "target_model:" in (error.hint or "")


def test_missing_scenario_heading() -> None:
    text = SMALL.replace("# Scenario s1: Subject", "Scenario s1")
    error = _error(text)
    assert "# Scenario" in error.message
    assert error.line == 11


def test_missing_dialogue_heading() -> None:
    error = _error(SMALL.replace("## Dialogue\n", ""))
    assert "## Dialogue" in error.message


def test_turn_without_answer() -> None:
    text = SMALL.replace("\n**Target:** Answer.\n", "")
    error = _error(text)
    assert error.message == "turn 1 has no `**Target:**` answer"
    assert error.line == 14


def test_turn_without_prompt() -> None:
    error = _error(SMALL.replace("**Probe:** Question?", "Question?"))
    assert error.message == "turn 1 does not start with `**Probe:**`"
    assert error.line == 15


def test_text_before_the_first_turn() -> None:
    error = _error(SMALL.replace("## Dialogue\n", "## Dialogue\nstray\n"))
    assert "before" in error.message or "between" in error.message
    assert error.line == 14


def test_heading_naming_another_scenario_is_a_warning() -> None:
    warnings: list[FormatWarning] = []
    t = parse_transcript(SMALL.replace("# Scenario s1:", "# Scenario s2:"), warnings=warnings)
    assert t.subject == "Subject"
    assert "s2" in warnings[0].message
