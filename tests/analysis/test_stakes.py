"""Dimension → value and the scale's labels, from the real CLI files."""

from __future__ import annotations

from tests.cli_corpus import Corpus

from valuerank.analysis.sensitivity_words import sentence
from valuerank.analysis.stakes import (
    CANONICAL_VALUES,
    dimension_values,
    direction,
    explicit_mapping,
    match_value,
    readable,
    scale_labels,
)
from valuerank.formats import parse_rubric
from valuerank.formats.definition_md import parse_definition, serialize_definition


def test_cli_definition_and_rubric_give_values_and_scale_ends(cli_corpus: Corpus) -> None:
    md = cli_corpus.path("definitions", cli_corpus.definition)
    rubric_path = cli_corpus.path("config", "values_rubric.yaml")
    definition = parse_definition(md.read_text("utf-8"), md.name)
    rubric, _ = parse_rubric(rubric_path.read_text("utf-8"), rubric_path.name)
    assert set(rubric.value_names) == set(CANONICAL_VALUES)
    dims = [d.name for d in definition.dimensions]
    assert dimension_values(dims, rubric.value_names) == cli_corpus.dimension_values
    labels = scale_labels(definition.template)
    assert labels[5] == cli_corpus.scale_top
    assert labels[1] == cli_corpus.scale_bottom
    entry = {"value": "Freedom", "coefficient": 0.62, "ci95": [0.48, 0.76], "status": "ok"}
    text = sentence("gpt-4.1", entry, {str(k): v for k, v in labels.items()})
    # The scale's ends without their strength ("strongly", "somewhat").
    top, bottom = (cli_corpus.scale_top, cli_corpus.scale_bottom)
    top, bottom = top.split(" ", 1)[1], bottom.split(" ", 1)[1]
    assert text == (
        f"a stronger Freedom stake moves gpt-4.1 towards '{top}' by 0.62 points per score unit"
        " [0.48, 0.76]"
    )
    down = {**entry, "coefficient": -0.3, "ci95": [-0.5, 0.1]}
    assert sentence("m", down, {str(k): v for k, v in labels.items()}) == (
        f"a stronger Freedom stake moves m towards '{bottom}' by 0.30 points per score unit"
        " [-0.10, 0.50] (the interval includes no effect)"
    )


def test_matching_prefers_the_longest_prefix_then_containment() -> None:
    vocabulary = ["Freedom", "Fair_Process", "Fair", "Harmony", "Social_Duty"]
    assert match_value("FairProcessCompete", vocabulary) == "Fair_Process"
    assert match_value("GroupHarmony", vocabulary) == "Harmony"
    assert match_value("social-duty level", vocabulary) == "Social_Duty"
    assert match_value("Tenure", vocabulary) is None
    assert readable("Human_Worthiness") == "Human worthiness"
    assert direction("Strongly support X") == "support X"
    assert direction("neutral") == "neutral"


def test_explicit_mapping_wins_and_survives_a_round_trip() -> None:
    text = (
        "---\nname: d\ndimension_values:\n  Tenure: Loyalty\n  harm: Physical_Safety\n---\n\n"
        "# Template\n\nI stayed [Tenure]; it [Harm].\nRate 1 to 5:\n5 - report now\n"
        "1 - stay quiet\n\n# Dimensions\n\n## Tenure\n\n| Score | Label | Options |\n"
        "|---|---|---|\n| 1 | short | short |\n| 2 | long | long |\n\n## Harm\n\n"
        "| Score | Label | Options |\n|---|---|---|\n| 1 | low | low |\n| 2 | high | high |\n"
    )
    definition = parse_definition(text, "d.md")
    again = parse_definition(serialize_definition(definition), "d.md")
    explicit = explicit_mapping(again.extra_front_matter)
    dims = [d.name for d in again.dimensions]
    assert dimension_values(dims, CANONICAL_VALUES, explicit) == {
        "Tenure": "Loyalty",
        "Harm": "Physical safety",
    }
    assert dimension_values(["Tenure"], CANONICAL_VALUES) == {"Tenure": "Tenure"}
    assert scale_labels(again.template) == {5: "report now", 1: "stay quiet"}
    assert scale_labels("no scale here") == {}
    assert explicit_mapping([("dimension_values", ["not", "a", "mapping"])]) == {}
