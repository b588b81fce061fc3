"""Structured diff of two definitions."""

from __future__ import annotations

import dataclasses
import json

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import examples

from valuerank.definitions.diff import (
    DefinitionDiff,
    DimensionChange,
    LevelChange,
    diff_definitions,
    render_diff,
)
from valuerank.formats.definition_model import Definition, Dimension, Level

BASE = Definition(
    name="exp-base",
    base_id="scenario_001",
    category="A vs B",
    preamble="Be honest.",
    template="Line one.\nUse [A] and [B].\nLine three.",
    dimensions=(
        Dimension("A", (Level(1, "low", ("tiny", "small")), Level(2, "high", ("big",)))),
        Dimension("B", (Level(1, "one", ("1",)), Level(3, "three", ("3",)))),
    ),
    matching_rules="A.score >= B.score",
    extra_front_matter=(("author", "me"), ("tags", ["x", "y"])),
)


def change(**fields: object) -> Definition:
    return dataclasses.replace(BASE, **fields)  # type: ignore[arg-type]


def test_identical_is_empty() -> None:
    diff = diff_definitions(BASE, BASE)
    assert diff.is_empty
    assert diff == DefinitionDiff()
    assert render_diff(diff) == ["no changes"]
    data = diff.to_dict()
    assert data["is_empty"] is True
    assert data["front_matter"] == []
    assert data["dimensions"] == {"added": [], "removed": [], "changed": [], "order": None}
    json.dumps(data)


def test_front_matter() -> None:
    after = change(name="exp-new", category="A vs C", base_id="scenario_002")
    diff = diff_definitions(BASE, after)
    assert [(c.field, c.before, c.after, c.kind) for c in diff.front_matter] == [
        ("name", "exp-base", "exp-new", "changed"),
        ("base_id", "scenario_001", "scenario_002", "changed"),
        ("category", "A vs B", "A vs C", "changed"),
    ]
    assert render_diff(diff) == [
        "name: 'exp-base' → 'exp-new'",
        "base_id: 'scenario_001' → 'scenario_002'",
        "category: 'A vs B' → 'A vs C'",
    ]
    assert diff.to_dict()["front_matter"][0] == {
        "field": "name",
        "kind": "changed",
        "before": "exp-base",
        "after": "exp-new",
    }


def test_extra_front_matter() -> None:
    after = change(extra_front_matter=(("tags", ["x"]), ("license", "MIT")))
    diff = diff_definitions(BASE, after)
    assert [(c.field, c.kind, c.before, c.after) for c in diff.front_matter] == [
        ("author", "removed", "me", None),
        ("tags", "changed", ["x", "y"], ["x"]),
        ("license", "added", None, "MIT"),
    ]
    lines = render_diff(diff)
    assert "author: removed (was 'me')" in lines
    assert "license: added 'MIT'" in lines
    reordered = change(extra_front_matter=(("tags", ["x", "y"]), ("author", "me")))
    diff = diff_definitions(BASE, reordered)
    assert [(c.field, c.before, c.after) for c in diff.front_matter] == [
        ("front matter order", ["author", "tags"], ["tags", "author"])
    ]
    assert not diff.is_empty


def test_text_diffs() -> None:
    after = change(
        preamble="Be honest and brief.",
        template="Line one.\nUse [A] or [B].\nLine three.",
    )
    diff = diff_definitions(BASE, after)
    assert diff.preamble is not None and diff.template is not None
    assert diff.template.lines == (
        "--- a/template",
        "+++ b/template",
        "@@ -1,3 +1,3 @@",
        " Line one.",
        "-Use [A] and [B].",
        "+Use [A] or [B].",
        " Line three.",
    )
    assert "-Be honest." in diff.preamble.lines
    assert "+Be honest and brief." in diff.preamble.lines
    lines = render_diff(diff)
    assert lines[0] == "preamble changed:"
    assert "  -Use [A] and [B]." in lines
    data = diff.to_dict()
    assert data["template"]["before"] == BASE.template
    assert data["template"]["diff"][4] == "-Use [A] and [B]."


def test_whitespace_only_text_change() -> None:
    diff = diff_definitions(BASE, change(template=BASE.template + "\n"))
    assert diff.template is not None
    assert diff.template.lines[-1] == "(only line endings or the final newline changed)"
    assert not diff.is_empty


def test_dimensions_added_removed() -> None:
    c = Dimension("C", (Level(1, "c", ("c",)),))
    after = change(dimensions=(BASE.dimensions[0], c))
    diff = diff_definitions(BASE, after)
    assert diff.dimensions_added == (c,)
    assert diff.dimensions_removed == (BASE.dimensions[1],)
    assert diff.dimensions_changed == ()
    assert diff.dimension_order is None
    assert render_diff(diff) == ["dimension added: C (levels 1)", "dimension removed: B"]
    data = diff.to_dict()["dimensions"]
    assert data["added"] == [c.to_dict()]
    assert data["removed"][0]["name"] == "B"


def test_levels_changed() -> None:
    a = Dimension(
        "A",
        (
            Level(1, "lowest", ("tiny", "small")),  # label changed
            Level(2, "high", ("huge",)),  # options changed
            Level(4, "max", ("max",)),  # added
        ),
    )
    b = Dimension("B", (Level(1, "one", ("1",)),))  # level 3 removed
    diff = diff_definitions(BASE, change(dimensions=(a, b)))
    assert diff.dimensions_added == diff.dimensions_removed == ()
    a_change, b_change = diff.dimensions_changed
    assert a_change == DimensionChange(
        name="A",
        name_before="A",
        levels_added=(Level(4, "max", ("max",)),),
        levels_removed=(),
        levels_changed=(
            LevelChange(1, BASE.dimensions[0].levels[0], a.levels[0]),
            LevelChange(2, BASE.dimensions[0].levels[1], a.levels[1]),
        ),
    )
    assert a_change.levels_changed[0].label_changed
    assert not a_change.levels_changed[0].options_changed
    assert a_change.levels_changed[1].options_changed
    assert b_change.levels_removed == (Level(3, "three", ("3",)),)
    assert render_diff(diff) == [
        "dimension changed: A",
        "  added level 4 'max' (options: max)",
        "  level 1 label: 'low' → 'lowest'",
        "  level 2 options: ['big'] → ['huge']",
        "dimension changed: B",
        "  removed level 3 'three' (options: 3)",
    ]
    level = diff.to_dict()["dimensions"]["changed"][0]["levels_changed"][1]
    assert level == {
        "score": 2,
        "label": {"before": "high", "after": "high"},
        "options": {"before": ["big"], "after": ["huge"]},
        "changed": ["options"],
    }


def test_rename_by_case_and_order() -> None:
    renamed = Dimension("b", BASE.dimensions[1].levels)
    diff = diff_definitions(BASE, change(dimensions=(renamed, BASE.dimensions[0])))
    (dim_change,) = diff.dimensions_changed
    assert dim_change.renamed
    assert (dim_change.name_before, dim_change.name) == ("B", "b")
    assert diff.dimension_order is not None
    assert (diff.dimension_order.before, diff.dimension_order.after) == (["A", "B"], ["b", "A"])
    lines = render_diff(diff)
    assert "  renamed: B → b" in lines
    assert "dimension order: A, B → b, A" in lines
    assert diff.to_dict()["dimensions"]["order"] == {"before": ["A", "B"], "after": ["b", "A"]}


def test_matching_rules() -> None:
    diff = diff_definitions(BASE, change(matching_rules="A.score > B.score\nprose"))
    assert diff.matching_rules is not None
    assert diff.matching_rules.before == "A.score >= B.score"
    assert diff.to_dict()["matching_rules"] == {
        "before": "A.score >= B.score",
        "after": "A.score > B.score\nprose",
    }
    lines = render_diff(diff)
    assert lines[0] == "matching rules changed:"
    assert "  -A.score >= B.score" in lines
    assert "  +prose" in lines
    removed = diff_definitions(BASE, change(matching_rules=None))
    assert "  (section removed)" in render_diff(removed)
    added = diff_definitions(change(matching_rules=None), BASE)
    assert "  (section added)" in render_diff(added)
    assert added.to_dict()["matching_rules"] == {"before": None, "after": "A.score >= B.score"}


# ----------------------------------------------------------------------------------------
# property: the diff is empty exactly when the stored content is equal

small_text = st.sampled_from(["", "a", "b", "a\nb", "a\nb\n", "x y"])


@st.composite
def dimensions(draw: st.DrawFn) -> tuple[Dimension, ...]:
    names = draw(st.lists(st.sampled_from(["A", "a", "B", "C"]), max_size=3, unique_by=str.lower))
    result = []
    for name in names:
        scores = sorted(draw(st.lists(st.integers(1, 4), max_size=3, unique=True)))
        levels = tuple(
            Level(
                s,
                draw(st.sampled_from(["lo", "hi"])),
                tuple(draw(st.lists(st.sampled_from(["p", "q"]), max_size=2))),
            )
            for s in scores
        )
        result.append(Dimension(name, levels))
    return tuple(result)


definitions = st.builds(
    Definition,
    name=st.sampled_from(["n1", "n2"]),
    template=small_text,
    dimensions=dimensions(),
    base_id=st.sampled_from(["s1", "s2"]),
    category=st.sampled_from(["", "c"]),
    preamble=small_text,
    matching_rules=st.one_of(st.none(), small_text),
    extra_front_matter=st.lists(
        st.tuples(st.sampled_from(["k1", "k2", "k3"]), st.sampled_from([1, "v", [1]])),
        max_size=3,
        unique_by=lambda kv: kv[0],
    ).map(tuple),
)


@settings(max_examples=examples(400), deadline=None)
@given(definitions, definitions)
def test_empty_iff_equal_content(before: Definition, after: Definition) -> None:
    diff = diff_definitions(before, after)
    assert diff.is_empty == (before.to_dict() == after.to_dict())
    assert diff_definitions(before, before).is_empty
    json.dumps(diff.to_dict())
    lines = render_diff(diff)
    assert lines and all(isinstance(line, str) for line in lines)
    assert (lines == ["no changes"]) == diff.is_empty
