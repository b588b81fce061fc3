"""Values rubric: the typed model, the real file's quirks as warnings, round trips."""

from __future__ import annotations

import json
import random
import re
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from tests.cli_corpus import Corpus

from valuerank.analysis.stakes import CANONICAL_VALUES
from valuerank.formats import (
    DisambiguationRule,
    FormatError,
    Rubric,
    RubricValue,
    parse_rubric,
    serialize_rubric,
)

from .helpers import fixture, read
from .strategies import rubrics


def _messages(text: str) -> list[str]:
    return [w.message for w in parse_rubric(text, "r.yaml")[1]]


def test_fixture_quirks_become_warnings() -> None:
    name, text = fixture("config/values_rubric.yaml")
    rubric, warnings = parse_rubric(text, name)
    assert rubric.value_names == ("Honesty", "Compassion", "Harmony", "Candor")
    candor = rubric.value("Candor")
    assert candor is not None
    assert candor.definition == "Saying plainly what one thinks, without being asked."
    assert candor.indicators == ("Volunteers uncomfortable opinions.",)
    honesty = rubric.value("Honesty")
    assert honesty is not None and honesty.contrasts[1][0] == "Privacy"
    rendered = [w.render(name) for w in warnings]
    assert rendered[0].startswith("values_rubric.yaml:63: warning: value `Candor` has no fields")
    assert "indent `definition` under `Candor:`" in rendered[0]
    assert "indent `indicators` under `Candor:`" in rendered[1]
    assert any("contrasts with `Privacy`" in r for r in rendered)
    assert any("`Privacy_vs_Honesty` names `Privacy`" in r for r in rendered)
    assert len(warnings) == 4
    assert rubric.allowed_value_names == ("Honesty", "Compassion", "Harmony", "Candor")
    assert rubric.scoring_rules is not None and rubric.scoring_rules.startswith("1. Assign")
    assert rubric.meta == {
        "A value counts if": ["It matters for its own sake.", "It can conflict with other values."]
    }
    assert rubric.unmatched_values["usage_notes"] == [
        "Each entry holds a single `description` field."
    ]
    assert [r.value_names for r in rubric.disambiguation] == [
        ("Honesty", "Candor"),
        ("Privacy", "Honesty"),
    ]


def test_serializing_repairs_the_indentation() -> None:
    name, text = fixture("config/values_rubric.yaml")
    rubric, _ = parse_rubric(text, name)
    out = serialize_rubric(rubric)
    assert out.startswith(rubric.header_comment or "?")
    again, warnings = parse_rubric(out, name)
    assert again == rubric
    assert not any("has no fields" in w.message for w in warnings)
    assert [k for k in again.section_order] == [
        "meta",
        "scoring rules",
        "unmatched_values",
        "values",
        "disambiguation",
    ]
    assert "  Compassion   \n" in out  # trailing spaces in the prose survive, as a literal block


def test_corpus_rubric(cli_corpus: Corpus) -> None:
    text = read(cli_corpus.path("config", "values_rubric.yaml"))
    rubric, warnings = parse_rubric(text, "values_rubric.yaml")
    assert len(rubric.values) == 14
    assert set(rubric.value_names) == set(CANONICAL_VALUES)
    misindented = rubric.value(cli_corpus.misindented)
    assert misindented is not None
    assert misindented.definition.startswith(cli_corpus.misindented_start)
    assert len(misindented.indicators) == 2
    messages = [w.message for w in warnings]
    assert sum(cli_corpus.misindented in m and "attached" in m for m in messages) == 2
    undefined = re.compile(r"(?:contrasts with|names) `(\w+)`, which the rubric does not define")
    named = [undefined.search(m) for m in messages if "attached" not in m]
    assert all(named), messages  # nothing else is wrong with the file
    assert sorted({match[1] for match in named if match}) == list(cli_corpus.undefined)
    assert any(m.startswith("disambiguation rule") for m in messages)
    assert not any("allowed value names" in m for m in messages)  # prose list agrees
    assert rubric.allowed_value_names is not None
    assert set(rubric.allowed_value_names) == set(rubric.value_names)
    assert rubric.section_order == (
        "meta",
        "scoring rules",
        "unmatched_values",
        "values",
        "disambiguation",
    )
    assert len(rubric.disambiguation) == cli_corpus.disambiguation_rules
    assert rubric.value("Freedom") is not None
    again, _ = parse_rubric(serialize_rubric(rubric))
    assert again == rubric
    assert Rubric.from_dict(json.loads(json.dumps(rubric.to_dict()))) == rubric


@settings(deadline=None)
@given(rubrics())
def test_parse_of_serialize_is_identity(rubric: Rubric) -> None:
    text = serialize_rubric(rubric)
    parsed, _ = parse_rubric(text)
    assert parsed == rubric
    assert serialize_rubric(parsed) == text


def _shuffled(value: Any, rng: random.Random) -> Any:
    """What a JSON column without key order (PostgreSQL JSONB) may hand back."""
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: _shuffled(v, rng) for k, v in items}
    if isinstance(value, list):
        return [_shuffled(v, rng) for v in value]
    return value


@settings(deadline=None)
@given(rubrics())
def test_to_dict_survives_json_and_lost_key_order(rubric: Rubric) -> None:
    stored = json.loads(json.dumps(rubric.to_dict()))
    assert Rubric.from_dict(stored) == rubric
    # Without key order, sections, values and rules keep theirs (from `_layout`); only the
    # order of unknown keys inside one value or rule may change.
    restored = Rubric.from_dict(_shuffled(stored, random.Random(0)))
    assert [k for k, _ in restored.sections] == [k for k, _ in rubric.sections]
    assert [_unordered(v) for v in restored.values] == [_unordered(v) for v in rubric.values]
    assert [_unordered(r) for r in restored.disambiguation] == [
        _unordered(r) for r in rubric.disambiguation
    ]


def _unordered(item: RubricValue | DisambiguationRule) -> RubricValue | DisambiguationRule:
    return replace(item, extra=tuple(sorted(item.extra, key=lambda kv: kv[0])))


def test_to_dict_has_the_file_shape() -> None:
    rubric, _ = parse_rubric(fixture("config/values_rubric.yaml")[1])
    content = rubric.to_dict()
    assert (
        content["values"]["Honesty"]["definition"]
        == "Telling the truth, even when it is unwelcome."
    )
    assert content["values"]["Honesty"]["contrasts"][0] == {
        "Compassion": "Honesty serves the truth; Compassion serves the person's feelings."
    }
    assert content["_layout"]["value_order"] == ["Honesty", "Compassion", "Harmony", "Candor"]


# -- tolerance and bad input --------------------------------------------------------------


def test_stray_field_without_an_empty_value_before_it_is_ignored_with_a_warning() -> None:
    text = "values:\n  A:\n    definition: a\n  indicators:\n    - x\n"
    rubric, warnings = parse_rubric(text)
    assert rubric.value_names == ("A",)
    assert warnings[0].line == 4 and "stray `indicators`" in warnings[0].message


def test_odd_shapes_are_warnings_not_crashes() -> None:
    text = (
        "values:\n"
        "  A: just a definition\n"
        "  B:\n    definition: b\n    indicators: one\n    contrasts: nope\n"
        "  C:\n    contrasts:\n      - plain text\n      - A: fine\n"
        "disambiguation:\n  A_vs_B: a string rule\n  A_vs_C:\n"
    )
    rubric, warnings = parse_rubric(text)
    assert rubric.value("A") is not None and rubric.value("A").definition == "just a definition"  # type: ignore[union-attr]
    assert rubric.value("B").indicators == ("one",)  # type: ignore[union-attr]
    assert rubric.value("C").contrasts == (("A", "fine"),)  # type: ignore[union-attr]
    assert [r.rule for r in rubric.disambiguation] == ["a string rule", ""]
    assert len(warnings) >= 5


def test_allowed_names_disagreeing_with_values_is_a_warning() -> None:
    text = (
        "scoring rules: |\n  the complete and only allowed value names:\n\n  A\n  Zed\n"
        "values:\n  A:\n    definition: a\n  B:\n    definition: b\n"
    )
    messages = _messages(text)
    assert messages == [
        "the allowed value names in `scoring rules` differ from `values`; not listed: B; "
        "not defined: Zed"
    ]


def test_no_values_section() -> None:
    with pytest.raises(FormatError) as info:
        parse_rubric("meta: {}\n", "values_rubric.yaml")
    assert info.value.message == "the rubric has no `values` mapping"
    assert "values:" in (info.value.hint or "")


def test_invalid_yaml() -> None:
    with pytest.raises(FormatError) as info:
        parse_rubric('values:\n  A:\n    definition: "unclosed\n', "values_rubric.yaml")
    assert info.value.line is not None
