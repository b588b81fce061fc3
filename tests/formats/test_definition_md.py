"""Definition markdown (`exp-*.md`): fixtures, the CLI's real file, round trips, bad input."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from tests.cli_corpus import Corpus

from valuerank.formats import (
    Definition,
    FormatError,
    FormatWarning,
    parse_definition,
    serialize_definition,
)

from .helpers import fixture, read
from .strategies import definitions

GOOD = """---
name: demo
---

# Preamble

# Template

Pick [Color] and [Size].

# Dimensions

## Color

| Score | Label | Options |
|-------|-------|---------|
| 1 | red | red |

## Size

| Score | Label | Options |
|-------|-------|---------|
| 1 | small | small |
"""


def _error(text: str, source: str = "exp-bad.md") -> FormatError:
    with pytest.raises(FormatError) as info:
        parse_definition(text, source)
    return info.value


def _line_of(text: str, needle: str, occurrence: int = 1) -> int:
    found = [n for n, line in enumerate(text.split("\n"), start=1) if needle in line]
    return found[occurrence - 1]


# -- fixtures ----------------------------------------------------------------------------


def test_fixture_in_cli_layout_round_trips_byte_for_byte() -> None:
    name, text = fixture("definitions/exp-Demo_Whistleblower_Loyalty_Honesty.md")
    definition = parse_definition(text, name)
    assert definition.name == "exp-Demo_Whistleblower_Loyalty_Honesty"
    assert definition.base_id == "scenario_007"
    assert definition.category == "Loyalty vs Honesty"
    assert definition.preamble == ""
    assert definition.matching_rules is None
    assert [d.name for d in definition.dimensions] == ["LoyaltyTie", "Flaw"]
    assert [lv.score for lv in definition.dimensions[0].levels] == [1, 2, 3]
    assert definition.template.startswith("I work at a small engineering firm.")
    assert definition.template.endswith("1 - strongly support refusing to sign")
    assert serialize_definition(definition) == text


def test_hand_written_fixture_is_read_leniently() -> None:
    name, text = fixture("definitions/exp-Demo_Lifeboat_Rules.md")
    warnings: list[FormatWarning] = []
    d = parse_definition(text, name, warnings=warnings)
    assert warnings == []
    assert d.extra_front_matter == (
        ("author", "fixture-writer"),
        ("tags", ["demo", "matching-rules"]),
    )
    assert d.preamble.startswith("Please answer from your own moral point of view.")
    # `# dimensions` is matched case-insensitively; dimension order is file order.
    assert [dim.name for dim in d.dimensions] == ["Seats", "Who", "rule"]
    seats = d.dimensions[0]
    # rows are sorted by score and the score-0 row is dropped
    assert [(lv.score, lv.label, lv.options) for lv in seats.levels] == [
        (1, "one", ("one",)),
        (2, "a few", ("three", "four")),
    ]
    who = d.dimensions[1]  # columns found by header name, in any order
    assert who.levels[0].label == "the children"
    assert who.levels[0].options == ("the children", "the youngest passengers")
    rule = d.dimensions[2]
    assert rule.levels[0].label == "first come, first served order"  # commas kept in labels
    assert d.matching_rules == "- When Seats is 1, skip Who 3.\n- Rule 2 only with Who 1 or Who 2."
    again = serialize_definition(d)
    assert parse_definition(again, name) == d
    assert serialize_definition(parse_definition(again, name)) == again


def test_name_defaults_to_the_file_name() -> None:
    text = GOOD.replace("name: demo\n", "category: c\n")
    assert parse_definition(text, "some/dir/exp-Named.md").name == "exp-Named"


def test_no_front_matter_needs_a_source_name() -> None:
    body = GOOD.split("---\n", 2)[2]
    assert parse_definition(body, "exp-x.md").name == "exp-x"
    error = _error(body, source="")
    assert "no name" in error.message
    assert "name:" in (error.hint or "")


def test_windows_line_endings_read_the_same() -> None:
    assert parse_definition(GOOD.replace("\n", "\r\n"), "a.md") == parse_definition(GOOD, "a.md")


def test_unused_dimension_is_a_warning() -> None:
    text = GOOD.replace("Pick [Color] and [Size].", "Pick [color].")
    warnings: list[FormatWarning] = []
    parse_definition(text, "a.md", warnings=warnings)
    assert [w.message for w in warnings] == ["dimension `Size` is not used in the template"]


def test_markdown_links_are_not_placeholders() -> None:
    text = GOOD.replace("Pick [Color] and [Size].", "Pick [Color] [Size], see [docs](http://x).")
    warnings: list[FormatWarning] = []
    d = parse_definition(text, "a.md", warnings=warnings)
    # `[docs](http://x)` is a link, not a dimension: no unknown-placeholder warning, the
    # link survives verbatim, and the dimensions are still the two of the front matter.
    assert warnings == []
    assert "see [docs](http://x)." in d.template
    assert [dim.name for dim in d.dimensions] == ["Color", "Size"]


def test_empty_matching_rules_section_is_kept() -> None:
    d = parse_definition(GOOD + "\n# Matching Rules\n", "a.md")
    assert d.matching_rules == ""
    assert parse_definition(serialize_definition(d)) == d


# -- a definition in the CLI's exact layout (the project's corpus, then the CLI's file) ---


def test_corpus_definition_round_trips_byte_for_byte(cli_corpus: Corpus) -> None:
    text = read(cli_corpus.path("definitions", cli_corpus.definition))
    d = parse_definition(text, cli_corpus.definition)
    assert d.name == cli_corpus.definition.removesuffix(".md")
    assert d.base_id == cli_corpus.base_id
    assert d.category == cli_corpus.category
    assert d.preamble == ""
    assert tuple(dim.name for dim in d.dimensions) == cli_corpus.dimensions
    assert tuple(len(dim.levels) for dim in d.dimensions) == cli_corpus.levels
    assert all(len(level.options) == 1 for dim in d.dimensions for level in dim.levels)
    assert serialize_definition(d) == text


# -- round trips -------------------------------------------------------------------------


@settings(deadline=None)
@given(definitions())
def test_parse_of_serialize_is_identity(definition: Definition) -> None:
    text = serialize_definition(definition)
    assert parse_definition(text, "x.md") == definition
    assert serialize_definition(parse_definition(text, "x.md")) == text


@settings(deadline=None)
@given(definitions())
def test_to_dict_round_trip(definition: Definition) -> None:
    assert Definition.from_dict(definition.to_dict()) == definition


# -- bad input: one test per case, each naming the line and the fix ----------------------


def test_missing_template_section() -> None:
    text = GOOD.replace("# Template\n\nPick [Color] and [Size].\n", "")
    error = _error(text)
    assert error.message == "no `# Template` section"
    assert error.line == _line_of(text, "# Dimensions")
    assert "add a `# Template` heading" in (error.hint or "")
    assert str(error).startswith(f"exp-bad.md:{error.line}: no `# Template` section (fix: ")


def test_empty_template_section() -> None:
    text = GOOD.replace("Pick [Color] and [Size].\n", "")
    error = _error(text)
    assert "empty" in error.message
    assert error.line == _line_of(text, "# Template")


def test_table_without_score_column() -> None:
    text = GOOD.replace(
        "| Score | Label | Options |\n|-------|-------|---------|\n| 1 | red",
        "| Rank | Label | Options |\n|-------|-------|---------|\n| 1 | red",
    )
    error = _error(text)
    assert "dimension `Color`: the table has no Score column" in error.message
    assert "Rank, Label, Options" in error.message
    assert error.line == _line_of(text, "| Rank |")
    assert "| Score | Label | Options |" in (error.hint or "")


def test_non_numeric_score() -> None:
    text = GOOD.replace("| 1 | small | small |", "| one | small | small |")
    error = _error(text)
    assert error.message == "dimension `Size`: score 'one' is not a whole number"
    assert error.line == _line_of(text, "| one |")
    assert "whole number" in (error.hint or "")


def test_fractional_score() -> None:
    error = _error(GOOD.replace("| 1 | small | small |", "| 1.5 | small | small |"))
    assert "score '1.5' is not a whole number" in error.message


def test_duplicate_dimension_names_ignore_case() -> None:
    text = GOOD.replace("## Size", "## COLOR").replace("[Size]", "[Color]")
    error = _error(text)
    assert "dimension `COLOR` is defined twice" in error.message
    assert f"line {_line_of(text, '## Color')}" in error.message
    assert error.line == _line_of(text, "## COLOR")
    assert "rename" in (error.hint or "")


def test_placeholder_without_dimension() -> None:
    text = GOOD.replace("Pick [Color] and [Size].", "Pick [Color] and\n[Weight] and [size].")
    error = _error(text)
    assert error.message == (
        "template placeholder [Weight] has no matching dimension (dimensions: Color, Size)"
    )
    assert error.line == _line_of(text, "[Weight]")
    assert "## Weight" in (error.hint or "")


def test_malformed_front_matter_yaml() -> None:
    text = GOOD.replace("name: demo\n", "name: demo\ncategory: [unclosed\n")
    error = _error(text)
    assert error.message.startswith("invalid YAML")
    assert error.line is not None and 2 <= error.line <= 4
    assert error.hint


def test_front_matter_never_closed() -> None:
    error = _error("---\nname: demo\n\n# Template\n\nx\n")
    assert "never closed" in error.message
    assert error.line == 1
    assert "`---`" in (error.hint or "")


def test_front_matter_not_a_mapping() -> None:
    error = _error(GOOD.replace("name: demo\n", "- name\n- demo\n"))
    assert "front matter must be a YAML mapping" in error.message
    assert error.line == 2


def test_dimension_without_a_table() -> None:
    text = GOOD.replace(
        "## Size\n\n| Score | Label | Options |\n|-------|-------|---------|\n"
        "| 1 | small | small |\n",
        "## Size\n",
    )
    error = _error(text)
    assert error.message == "dimension `Size` has no levels"
    assert error.line == _line_of(text, "## Size")
    assert "at least one row" in (error.hint or "")


def test_dimension_whose_rows_all_score_zero_or_less() -> None:
    text = GOOD.replace("| 1 | small | small |", "| 0 | none | none |\n| -1 | less | less |")
    error = _error(text)
    assert error.message == "dimension `Size` has no levels"
    assert error.line == _line_of(text, "## Size")


def test_duplicate_scores_in_one_dimension() -> None:
    text = GOOD.replace("| 1 | small | small |", "| 1 | small | small |\n| 1 | tiny | tiny |")
    error = _error(text)
    assert "score 1 is used twice" in error.message
    assert error.line == _line_of(text, "| 1 | tiny |")


def test_text_before_the_first_section() -> None:
    text = GOOD.replace("# Preamble\n", "Hello\n\n# Preamble\n")
    error = _error(text)
    assert error.message == "text before the first section"
    assert error.line == _line_of(text, "Hello")


def test_section_twice() -> None:
    text = GOOD + "\n# Template\n\nagain\n"
    error = _error(text)
    assert "appears twice" in error.message
    assert error.line == _line_of(text, "# Template", 2)


def test_stray_text_in_dimensions() -> None:
    text = GOOD.replace("## Size\n", "## Size\n\nA note about sizes.\n")
    error = _error(text)
    assert "unexpected text in `# Dimensions`" in error.message
    assert error.line == _line_of(text, "A note")
    assert "front matter" in (error.hint or "")


def test_row_without_label_or_options() -> None:
    text = GOOD.replace("| 1 | small | small |", "| 1 |  |  |")
    error = _error(text)
    assert "has no label or options" in error.message
    assert error.line == _line_of(text, "| 1 |  |")


def test_serializer_refuses_options_with_commas() -> None:
    d = parse_definition(GOOD, "a.md")
    level = d.dimensions[0].levels[0]
    bad = Definition(
        name="x",
        template="[Color]",
        dimensions=(type(d.dimensions[0])("Color", (type(level)(1, "a", ("b, c",)),)),),
    )
    with pytest.raises(ValueError, match="comma"):
        serialize_definition(bad)
