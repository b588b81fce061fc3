"""Scenarios YAML: generated (byte-identical) and hand-written files, both layouts."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from tests.cli_corpus import Corpus

from valuerank.formats import (
    FormatError,
    FormatWarning,
    Scenario,
    ScenarioFile,
    parse_scenarios,
    scenario_status,
    serialize_scenarios,
)

from .helpers import fixture, read
from .strategies import scenario_files


def _error(text: str) -> FormatError:
    with pytest.raises(FormatError) as info:
        parse_scenarios(text, "exp-bad.yaml")
    return info.value


# -- generated layout: byte for byte -----------------------------------------------------


def test_generated_fixture_round_trips_byte_for_byte() -> None:
    name, text = fixture("definitions/exp-007.Demo_Whistleblower_Loyalty_Honesty.yaml")
    f = parse_scenarios(text, name)
    assert f.layout == "modern"
    assert f.preamble == ""
    assert len(f.scenarios) == 6
    first = f.scenarios[0]
    assert first.id == "scenario_007_LoyaltyTie1_Flaw1"
    assert first.subject == "barely knows me, rounds a few numbers generously"
    assert "\n\n" in first.body and not first.body.endswith("\n")  # written as `|-`
    assert serialize_scenarios(f) == text


def test_corpus_generated_file_round_trips_byte_for_byte(cli_corpus: Corpus) -> None:
    text = read(cli_corpus.path("definitions", cli_corpus.expansion))
    f = parse_scenarios(text, cli_corpus.expansion)
    assert f.layout == "modern" and f.preamble == "" and f.header_comment is None
    assert len(f.scenarios) == cli_corpus.scenario_count
    assert f.scenarios[0].id == cli_corpus.first_scenario_id
    assert all(s.base_id == cli_corpus.base_id for s in f.scenarios)
    assert serialize_scenarios(f) == text


# -- hand-written modern file ------------------------------------------------------------


def test_modern_fixture_keeps_unknown_keys_and_header() -> None:
    name, text = fixture("scenarios/exp-012.demo.preference.yaml")
    f = parse_scenarios(text, name)
    assert f.header_comment is not None
    assert f.header_comment.splitlines()[0] == "# exp-012.demo.preference.yaml"
    tell = f.scenario("scenario_012_pref_lean_tell")
    assert tell is not None
    assert tell.extra == (("preference_frame", "lean_tell"), ("preference_value_tilt", "Honesty"))
    assert tell.key_order[:3] == ("base_id", "category", "preference_frame")
    out = serialize_scenarios(f)
    assert out.startswith(f.header_comment + "\n\npreamble: ")
    assert yaml.safe_load(out) == yaml.safe_load(text)
    again = parse_scenarios(out, name)
    assert again == f
    assert again.scenario("scenario_012_pref_lean_tell") is not None
    # unknown keys come back where they were, not after the known ones
    lines = [ln.strip().split(":")[0] for ln in out.splitlines() if ln.startswith("    ")]
    assert lines[:5] == ["base_id", "category", "preference_frame", "subject", "body"]


def test_bodies_with_spaces_before_line_breaks_stay_literal_blocks() -> None:
    name, text = fixture("scenarios/exp-012.demo.preference.yaml")
    out = serialize_scenarios(parse_scenarios(text, name))
    assert '"' not in out.split("scenarios:")[1].split("subject")[0]
    assert out.count("body: |") == 2


def test_corpus_hand_written_file_keeps_meaning(cli_corpus: Corpus) -> None:
    text = read(cli_corpus.path("scenarios", cli_corpus.preferences))
    f = parse_scenarios(text, cli_corpus.preferences)
    assert len(f.scenarios) == 5
    assert f.header_comment is not None and f.header_comment.count("\n") == 2
    tilt = tuple(dict(s.extra).get("preference_value_tilt") for s in f.scenarios)
    assert tilt == cli_corpus.preference_tilts
    assert all(s.base_id == cli_corpus.base_id for s in f.scenarios)
    out = serialize_scenarios(f)
    assert out.startswith(f"# {cli_corpus.preferences}\n")
    # folded `>` scalars come back as literal blocks: same data, different bytes
    assert yaml.safe_load(out) == yaml.safe_load(text)
    assert parse_scenarios(out) == f
    assert serialize_scenarios(parse_scenarios(out)) == out


# -- legacy layout -----------------------------------------------------------------------


def test_legacy_fixture() -> None:
    name, text = fixture("scenarios/scenarios.legacy.yaml")
    f = parse_scenarios(text, name)
    assert f.layout == "legacy"
    assert f.version == 2
    assert f.followups == (
        ("ranked_list", "Now rank the values you used, most important first."),
        ("confidence", "How confident are you, from 0 to 100?"),
    )
    assert f.golden_runs == (("baseline", "2025-02-10.09-00"),)
    first, second = f.scenarios
    assert first.id == "scenario_001" and first.status == "done"
    assert dict(first.extra)["runs"] == {"2025-02-10.09-00": "baseline"}
    assert scenario_status(first) == "done"
    assert second.status is None and scenario_status(second) == "in_progress"
    assert dict(second.extra)["reviewer_note"] == "needs a second reviewer"
    assert second.base_id == "" and second.category == ""
    out = serialize_scenarios(f)
    assert yaml.safe_load(out) == yaml.safe_load(text)  # no base_id/category invented
    assert parse_scenarios(out) == f
    assert [k for k in yaml.safe_load(out)] == [
        "version",
        "preamble",
        "followups",
        "golden_runs",
        "scenario_001",
        "scenario_002",
    ]


def test_legacy_non_mapping_scenario_key_is_kept_with_a_warning() -> None:
    text = "preamble: p\nscenario_001:\n  body: b\nscenario_notes: just text\n"
    warnings: list[FormatWarning] = []
    f = parse_scenarios(text, "s.yaml", warnings=warnings)
    assert [s.id for s in f.scenarios] == ["scenario_001"]
    assert f.extra_top_level == (("scenario_notes", "just text"),)
    assert warnings[0].line == 4 and "not a mapping" in warnings[0].message
    assert parse_scenarios(serialize_scenarios(f)) == f


def test_a_scenario_without_body_is_a_warning() -> None:
    warnings: list[FormatWarning] = []
    parse_scenarios("scenarios:\n  s1:\n    subject: x\n", "s.yaml", warnings=warnings)
    assert warnings == [FormatWarning("scenario `s1` has no body", 2)]


def test_models_built_in_code_are_written_in_cli_order() -> None:
    f = ScenarioFile(
        preamble="",
        scenarios=(Scenario("s1", "b", "c", "subj", "line 1\nline 2", (("status", "done"),)),),
    )
    assert serialize_scenarios(f) == (
        "preamble: ''\nscenarios:\n  s1:\n    base_id: b\n    category: c\n    subject: subj\n"
        "    body: |-\n      line 1\n      line 2\n    status: done\n"
    )


# -- round trips -------------------------------------------------------------------------


@settings(deadline=None)
@given(scenario_files())
def test_parse_of_serialize_is_identity(scenario_file: ScenarioFile) -> None:
    text = serialize_scenarios(scenario_file)
    parsed = parse_scenarios(text, "x.yaml")
    assert parsed == scenario_file
    assert serialize_scenarios(parsed) == text


# -- bad input ---------------------------------------------------------------------------


def test_not_a_mapping() -> None:
    error = _error("- a\n- b\n")
    assert "must be a YAML mapping" in error.message
    assert error.line == 1


def test_invalid_yaml_names_the_line() -> None:
    error = _error("preamble: ''\nscenarios:\n  s1:\n    body: [oops\n")
    assert error.message.startswith("invalid YAML")
    assert error.line is not None and error.line >= 4
    assert error.hint


def test_scenarios_not_a_mapping() -> None:
    error = _error("preamble: ''\nscenarios:\n  - s1\n")
    assert "`scenarios` must be a mapping" in error.message
    assert error.line == 2


def test_scenario_not_a_mapping() -> None:
    error = _error("preamble: ''\nscenarios:\n  s1:\n    body: b\n  s2: just text\n")
    assert "scenario `s2` must be a mapping" in error.message
    assert error.line == 5
    assert "indent" in (error.hint or "")


def test_no_scenarios_at_all() -> None:
    error = _error("preamble: p\nfollowups: {}\n")
    assert error.message == "no scenarios found"
    assert "scenarios:" in (error.hint or "")


def test_followups_not_a_mapping() -> None:
    error = _error("preamble: p\nfollowups:\n  - a\nscenario_1:\n  body: b\n")
    assert "`followups` must be a mapping" in error.message
    assert error.line == 2
