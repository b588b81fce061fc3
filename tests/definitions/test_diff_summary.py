"""The diff page's summary: one meaningful line per changed part, never an empty one."""

from __future__ import annotations

from valuerank.definitions.diff import diff_definitions
from valuerank.definitions.diff_summary import summarize_diff
from valuerank.formats.definition_model import Dimension, Level

from .test_diff import BASE, change


def test_nothing_changed() -> None:
    assert summarize_diff(diff_definitions(BASE, BASE)) == ["no changes"]


def test_texts_are_counted_not_listed_line_by_line() -> None:
    after = change(
        preamble="Be honest.\nBe brief.",
        template="Line one.\nUse [A] or [B].\nLine three.",
    )
    assert summarize_diff(diff_definitions(BASE, after)) == [
        "preamble: 1 line added",
        "template: 1 line added, 1 removed",
    ]
    fewer = change(template="Line one.")
    assert summarize_diff(diff_definitions(BASE, fewer)) == ["template: 2 lines removed"]
    newline = change(template=BASE.template + "\n")
    assert summarize_diff(diff_definitions(BASE, newline)) == [
        "template: only line endings or the final newline changed"
    ]


def test_each_dimension_is_one_line_with_its_level_changes() -> None:
    changed_a = Dimension(
        "a",
        (Level(1, "lowest", ("tiny", "small")), Level(2, "high", ("huge",)), Level(3, "top", ())),
    )
    c = Dimension("C", (Level(1, "c", ("c",)), Level(2, "cc", ("cc",))))
    after = change(
        name="exp-new",
        dimensions=(c, changed_a),
        matching_rules=None,
        extra_front_matter=(("author", "me"),),
    )
    lines = summarize_diff(diff_definitions(BASE, after))
    assert lines == [
        "name: 'exp-base' → 'exp-new'",
        "tags: removed (was ['x', 'y'])",
        "dimension C added (2 levels)",
        "dimension B removed",
        "dimension a: renamed from A; level 3 'top' added; level 1 label 'low' → 'lowest'; "
        "level 2 options changed",
        "matching rules removed",
    ]
    assert all(line.strip() for line in lines)


def test_dimension_order_and_matching_rules() -> None:
    swapped = change(dimensions=tuple(reversed(BASE.dimensions)), matching_rules="B.score > 1")
    assert summarize_diff(diff_definitions(BASE, swapped)) == [
        "dimension order: A, B → B, A",
        "matching rules changed",
    ]
    added = diff_definitions(change(matching_rules=None), BASE)
    assert summarize_diff(added) == ["matching rules added"]
