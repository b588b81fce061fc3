"""The packaged default values rubric: a valid file of the CLI's rubric layout with the CLI's 14
canonical values, definitions of our own, shipped in the wheel; and how it is described."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

from tests.cli_corpus import Corpus

import valuerank
from valuerank.analysis.stakes import CANONICAL_VALUES
from valuerank.default_rubric import (
    DEFAULT_RUBRIC_NAME,
    default_rubric,
    default_rubric_text,
    describe_rubric,
)
from valuerank.formats import parse_rubric, serialize_rubric

ROOT = Path(__file__).parents[1]
# The canonical values of the CLI's config/values_rubric.yaml, in its order.
CANONICAL = CANONICAL_VALUES


def test_the_packaged_rubric_parses_cleanly_with_the_14_canonical_values() -> None:
    rubric, warnings = parse_rubric(default_rubric_text(), source="values_rubric.yaml")
    assert warnings == []  # contrasts, rules and the allowed names all name defined values
    assert rubric.value_names == CANONICAL
    assert rubric.allowed_value_names == CANONICAL  # the `scoring rules` list agrees
    assert rubric == default_rubric()
    for value in rubric.values:
        # One or two plain sentences each, and something a judge can recognise it by.
        assert 20 < len(value.definition) < 200 and value.definition.endswith(".")
        assert value.indicators, value.name
    assert rubric.meta is not None and rubric.unmatched_values is not None


def test_it_round_trips_as_a_cli_file() -> None:
    rubric = default_rubric()
    again, warnings = parse_rubric(serialize_rubric(rubric))
    assert warnings == [] and again == rubric


def test_it_covers_the_clis_values_with_definitions_of_our_own(cli_corpus: Corpus) -> None:
    cli_rubric, _ = parse_rubric(cli_corpus.path("config", "values_rubric.yaml").read_text())
    assert cli_rubric.allowed_value_names == CANONICAL
    ours = {v.name: v.definition for v in default_rubric().values}
    for value in cli_rubric.values:
        if value.name in ours and value.definition:
            assert ours[value.name] != value.definition, f"{value.name}: copied, not written"
    # The same top-level layout as the CLI's file.
    assert set(cli_rubric.section_order) <= set(default_rubric().section_order)


def test_the_wheel_ships_it() -> None:
    """pyproject's package-data for `valuerank` matches the file (the wheel builds from it)."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = data["tool"]["setuptools"]["package-data"]["valuerank"]
    package = Path(valuerank.__file__).parent
    shipped = package / "rubric_data" / "values_rubric.yaml"
    assert shipped.is_file()
    relative = shipped.relative_to(package).as_posix()
    assert any(fnmatch.fnmatch(relative, p) for p in patterns), patterns


def test_the_description_says_which_rubric_and_whether_it_is_the_default() -> None:
    default = {"name": DEFAULT_RUBRIC_NAME, "version_label": "v1", "values": 14, "default": True}
    assert describe_rubric(default) == (
        "valuerank-default v1 (14 values; the default rubric, as the organisation has none)"
    )
    own = {"name": "values", "version_label": "v2", "values": 1, "default": False}
    assert describe_rubric(own) == "values v2 (1 value)"
    preview = {**default, "version_label": None}
    assert describe_rubric(preview).startswith("valuerank-default (14 values")
