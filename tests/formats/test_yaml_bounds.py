"""The bounded YAML loader: hostile documents (alias bombs, merge-key bombs, cyclic aliases,
deep nesting, oversized text) fail at once with a FormatError naming the line, while every
legitimate use of aliases and nesting still loads; and no module reads YAML any other way."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from valuerank.formats import yaml_bounds, yaml_io
from valuerank.formats.errors import FormatError

SRC = Path(__file__).parents[2] / "src" / "valuerank"


def laughs(levels: int, width: int = 9) -> str:
    """The "billion laughs": each level lists the previous one `width` times."""
    lines = ["l0: &l0 " + "[" + ", ".join(["lol"] * width) + "]"]
    for level in range(1, levels):
        refs = ", ".join([f"*l{level - 1}"] * width)
        lines.append(f"l{level}: &l{level} [{refs}]")
    return "\n".join(lines) + "\n"


def merge_bomb(levels: int) -> str:
    """Merge keys copy the merged mapping's pairs: the same blow-up without sequences."""
    lines = ["m0: &m0 {a: 1, b: 2, c: 3}"]
    for level in range(1, levels):
        refs = ", ".join([f"*m{level - 1}"] * 10)
        lines.append(f"m{level}: &m{level} {{<<: [{refs}]}}")
    return "\n".join(lines) + "\n"


def block_nesting(depth: int) -> str:
    return "".join(f"{'  ' * level}k{level}:\n" for level in range(depth)) + "  " * depth + "x\n"


@pytest.mark.parametrize(
    ("text", "words", "line"),
    [
        (laughs(9), "aliases expand to more than", 5),
        (merge_bomb(8), "aliases expand to more than", 5),
        ("a: &a [1, *a]\n", "refers to a node that contains it", 1),
        ("x: 1\nb: &b {self: *b}\n", "refers to a node that contains it", 2),
        (block_nesting(yaml_bounds.MAX_DEPTH + 5), f"more than {yaml_bounds.MAX_DEPTH}", None),
        # libyaml's own nesting limit or ours, whichever comes first: both name the line.
        ("a: " + "[" * 50_000 + "]" * 50_000, "nest", 1),
        ("a: " + "{b: " * 50_000 + "1" + "}" * 50_000, "nest", 1),
    ],
    ids=["laughs", "merge-keys", "cycle", "cycle-map", "block-depth", "flow-list", "flow-map"],
)
def test_hostile_documents_fail_at_once_naming_the_line(
    text: str, words: str, line: int | None
) -> None:
    with pytest.raises(FormatError) as caught:
        yaml_io.load(text, "hostile.yaml")
    error = caught.value
    assert words in error.message
    assert error.source == "hostile.yaml" and error.hint
    if line is not None:
        assert error.line == line


def test_oversized_text_is_refused_before_parsing() -> None:
    # Refused by its length alone: a 16 MiB string costs nothing to build, and nothing parses.
    with pytest.raises(FormatError, match="larger than"):
        yaml_io.load("a: " + "x" * yaml_bounds.MAX_CHARS)
    assert yaml_io.load("a: " + "x" * 50).data == {"a": "x" * 50}


def test_legitimate_aliases_and_nesting_still_load() -> None:
    shared = yaml_io.load("base: &b {x: 1, y: [1, 2]}\nother: *b\nmerged: {<<: *b, y: 3}\n")
    assert shared.data == {
        "base": {"x": 1, "y": [1, 2]},
        "other": {"x": 1, "y": [1, 2]},
        "merged": {"x": 1, "y": 3},
    }
    assert shared.line("other") == 2
    deep = yaml_io.load(block_nesting(yaml_bounds.MAX_DEPTH - 2))
    assert deep.line(*[f"k{level}" for level in range(yaml_bounds.MAX_DEPTH - 2)]) == (
        yaml_bounds.MAX_DEPTH - 2
    )
    # Just under the alias budget: 9 x 9 x 9 x 9 = 6,561 expanded leaves.
    assert len(yaml_io.load(laughs(4)).data["l3"]) == 9


def test_the_bounds_hold_on_the_pure_python_parser_too() -> None:
    """Without libyaml the loader runs on PyYAML's own parser: the same bounds, the same data."""
    assert yaml_bounds.bounded_loader("a: 1") is not None  # the default: libyaml here
    for text in (laughs(9), "a: " + "[" * 50_000 + "]" * 50_000, "a: &a [*a]"):
        with pytest.raises(yaml_bounds.YamlTooComplex):
            yaml_bounds.PurePythonBoundedLoader(text).get_single_node()
    loader = yaml_bounds.PurePythonBoundedLoader("a: &x [1]\nb: *x\n")
    assert loader.construct_document(loader.get_single_node()) == {"a": [1], "b": [1]}


def test_every_yaml_read_goes_through_the_bounded_loader() -> None:
    """A new `yaml.safe_load` somewhere would reopen the hole: only yaml_bounds builds a
    loader, and only yaml_io calls it."""
    unbounded = re.compile(r"yaml\.(safe_load|load|full_load|unsafe_load|compose)\b|SafeLoader\(")
    offenders = [
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if path.name != "yaml_bounds.py" and unbounded.search(path.read_text())
    ]
    assert offenders == []
