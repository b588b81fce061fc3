"""Matching rules: line classification, the expression parser, errors and filtering."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from tests.conftest import examples

from valuerank.definitions.errors import DefinitionError
from valuerank.definitions.rules import (
    Rule,
    RuleSet,
    is_machine_readable,
    parse_rule,
    parse_rules,
    rules_for,
)
from valuerank.formats.definition_model import Definition, Dimension, Level

DIMS = ["Freedom", "Harmony", "Fair Process"]


def holds(text: str, **scores: int) -> bool:
    expr = parse_rule(text, ["a", "b", "c"])
    return expr.holds({k.lower(): v for k, v in scores.items()})


# ----------------------------------------------------------------------------------------
# classification of lines


def test_none_and_empty() -> None:
    assert parse_rules(None, DIMS) == RuleSet()
    assert parse_rules("", DIMS).is_empty
    assert parse_rules("\n  \n\t\n", DIMS).is_empty
    assert RuleSet().allows({"anything": 1})


def test_prose_and_machine_lines() -> None:
    text = (
        "Combinations should be realistic.\n"
        "\n"
        "- Freedom.score >= Harmony.score\n"
        "* Avoid extreme pairs; the score matters.\n"
        "  1. `harmony.SCORE != 5`\n"
        "2) [fair process].score < 5\n"
        "+ plain bullet\n"
    )
    rules = parse_rules(text, DIMS)
    assert rules.prose == (
        "Combinations should be realistic.",
        "Avoid extreme pairs; the score matters.",
        "plain bullet",
    )
    assert [(r.text, r.line) for r in rules.rules] == [
        ("Freedom.score >= Harmony.score", 3),
        ("harmony.SCORE != 5", 5),
        ("[fair process].score < 5", 6),
    ]
    assert rules.rules[2].dimensions == frozenset({"Fair Process"})
    assert not rules.is_empty


@pytest.mark.parametrize(
    ("line", "machine"),
    [
        ("a.score > 1", True),
        ("A.Score", True),
        ("[Some Name].score", True),
        ("x . score", True),
        ("The score of A matters", False),
        ("a.scores > 1", False),
        ("a.level > 1", False),
        ("scoreboard.score", True),
        ("", False),
    ],
)
def test_is_machine_readable(line: str, machine: bool) -> None:
    assert is_machine_readable(line) is machine


def test_lines_without_score_are_prose() -> None:
    rules = parse_rules("`just code`\n1 > 2\n1.score > 1", DIMS)
    assert rules.prose == ("`just code`", "1 > 2", "1.score > 1")
    assert rules.rules == ()


def test_rules_for_definition() -> None:
    definition = Definition(
        name="n",
        template="",
        dimensions=(Dimension("A", (Level(1, "x", ("x",)),)),),
        matching_rules="a.score == 1\nprose",
    )
    rules = rules_for(definition)
    assert len(rules.rules) == 1 and rules.prose == ("prose",)
    assert rules.rules[0].dimensions == frozenset({"A"})


# ----------------------------------------------------------------------------------------
# semantics


@pytest.mark.parametrize(
    ("text", "scores", "expected"),
    [
        ("a.score == 1", {"a": 1}, True),
        ("a.score == 1", {"a": 2}, False),
        ("a.score != 1", {"a": 2}, True),
        ("a.score < 2", {"a": 1}, True),
        ("a.score <= 1", {"a": 1}, True),
        ("a.score > 1", {"a": 1}, False),
        ("a.score >= 1", {"a": 1}, True),
        ("a.score ≥ 2", {"a": 2}, True),
        ("a.score ≤ 1", {"a": 2}, False),
        ("a.score ≠ 1", {"a": 2}, True),
        ("1 < a.score <= 3", {"a": 3}, True),
        ("1 < a.score <= 3", {"a": 1}, False),
        ("1 < a.score <= 3", {"a": 4}, False),
        ("a.score < b.score < c.score", {"a": 1, "b": 2, "c": 3}, True),
        ("a.score < b.score < c.score", {"a": 1, "b": 3, "c": 2}, False),
        ("a.score + b.score == 5", {"a": 2, "b": 3}, True),
        ("a.score - b.score == -1", {"a": 2, "b": 3}, True),
        ("a.score - b.score - c.score == -4", {"a": 1, "b": 2, "c": 3}, True),
        ("-a.score + 3 == 1", {"a": 2}, True),
        ("a.score - -1 == 3", {"a": 2}, True),
        ("a.score > 2.5", {"a": 3}, True),
        ("a.score > 2.5", {"a": 2}, False),
        ("a.score == 0.1 + 0.2 + 2.7", {"a": 3}, True),  # exact, no float rounding
        ("a.score >= .5", {"a": 1}, True),
        ("a.score == 1 or a.score == 2 and b.score == 3", {"a": 1, "b": 1}, True),
        ("(a.score == 1 or a.score == 2) and b.score == 3", {"a": 1, "b": 1}, False),
        ("not a.score == 1", {"a": 1}, False),
        ("not not a.score == 1", {"a": 1}, True),
        ("! (a.score == 1)", {"a": 2}, True),
        ("a.score == 1 && b.score == 2", {"a": 1, "b": 2}, True),
        ("a.score == 9 || b.score == 2", {"a": 1, "b": 2}, True),
        ("a.score == 1 AND NOT b.score == 3 Or c.score == 1", {"a": 1, "b": 3, "c": 2}, False),
        ("((a.score)) == (1)", {"a": 1}, True),
        ("(a.score + 1) - 1 == a.score", {"a": 4}, True),
    ],
)
def test_evaluation(text: str, scores: dict[str, int], expected: bool) -> None:
    full = {"a": 1, "b": 1, "c": 1, **scores}
    assert holds(text, **full) is expected


def test_dimension_names_case_insensitive_everywhere() -> None:
    rule = parse_rules("FREEDOM.score > harmony.Score", DIMS).rules[0]
    assert rule.dimensions == frozenset({"Freedom", "Harmony"})
    assert rule.holds({"freedom": 3, "HARMONY": 2})
    assert not rule.holds({"Freedom": 1, "Harmony": 2})
    assert str(rule) == "Freedom.score > Harmony.score"


def test_dimensions_named_like_keywords() -> None:
    rules = parse_rules("not.score > and.score or or.score == 1", ["and", "or", "not"])
    (rule,) = rules.rules
    assert rule.dimensions == frozenset({"and", "or", "not"})
    assert rule.holds({"not": 2, "and": 1, "or": 5})
    assert not rule.holds({"not": 1, "and": 1, "or": 5})
    assert str(rule) == "[not].score > [and].score or [or].score == 1"


def test_unicode_names() -> None:
    (rule,) = parse_rules("Äquität.score >= Ωmega.score", ["äquität", "ωmega"]).rules
    assert rule.holds({"äquität": 2, "ωmega": 2})


def test_missing_score_raises() -> None:
    rules = parse_rules("a.score > b.score", ["a", "b"])
    with pytest.raises(DefinitionError, match="no score given for dimension 'b'"):
        rules.allows({"a": 1})


def test_ruleset_filter_3x3() -> None:
    rules = parse_rules("a.score >= b.score", ["a", "b"])
    combos = [{"a": a, "b": b} for a, b in itertools.product(range(1, 4), repeat=2)]
    kept = list(rules.filter(combos, lambda c: c))
    assert len(kept) == 6
    assert all(c["a"] >= c["b"] for c in kept)


def test_several_rules_all_must_hold() -> None:
    rules = parse_rules("a.score >= b.score\nb.score >= 2\nnot prose", ["a", "b"])
    combos = [{"a": a, "b": b} for a, b in itertools.product(range(1, 4), repeat=2)]
    assert [(c["a"], c["b"]) for c in rules.filter(combos, lambda c: c)] == [
        (2, 2),
        (3, 2),
        (3, 3),
    ]


# ----------------------------------------------------------------------------------------
# errors


def error_of(text: str, dims: list[str] | None = None, first_line: int = 1) -> DefinitionError:
    with pytest.raises(DefinitionError) as info:
        parse_rules(text, DIMS if dims is None else dims, first_line=first_line)
    return info.value


def test_unknown_dimension() -> None:
    err = error_of("Some prose.\n\n- Freedom.score > Justice.score")
    assert err.line == 3
    assert err.column == 19
    assert "unknown dimension 'Justice'" in err.message
    assert err.hint is not None
    assert "Freedom, Harmony, Fair Process" in err.hint
    text = str(err)
    assert text.startswith("line 3, column 19: unknown dimension 'Justice'")
    assert "Freedom.score > Justice.score" in text


def test_unknown_dimension_without_dimensions() -> None:
    err = error_of("a.score > 1", dims=[])
    assert err.hint is not None and "(none)" in err.hint


def test_first_line_offset() -> None:
    err = error_of("prose\nFreedom.score >> 1", first_line=40)
    assert err.line == 41


@pytest.mark.parametrize(
    ("text", "column", "fragment"),
    [
        ("Freedom.score = 2", 15, "`=` is not a comparison"),
        ("Freedom.score >", 16, "found the end of the rule"),
        ("Freedom.score >> 1", 16, "found `>`"),
        ("(Freedom.score > 1", 19, "expected `)` to close the `(` at column 3"),
        ("Freedom.score > 1)", 18, "unexpected `)`"),
        ("Freedom.score > 1 Harmony.score", 19, "unexpected `Harmony`"),
        ("Freedom.score > $3", 17, "unexpected character '$'"),
        ("Freedom.score and Harmony.score > 1", 1, "`and` needs a condition"),
        ("Harmony.score > 1 or 3", 22, "`or` needs a condition"),
        ("not Freedom.score", 5, "`not` needs a condition"),
        ("Freedom.score + 1", 1, "a rule must be a condition"),
        ("(Freedom.score > 1) > 2", 1, "a comparison needs a number"),
        ("Freedom.score > (Harmony.score > 1)", 17, "a comparison needs a number"),
        ("(Freedom.score > 1) + 1 > 0", 1, "`+` needs a number"),
        ("- (Freedom.score > 1)", 3, "`-` needs a number"),
        ("Freedom.level > 1 and Harmony.score > 1", 9, "expected `score`"),
        ("Freedom > 1 and Harmony.score > 1", 1, "`Freedom` is a dimension"),
        ("Keep Freedom.score above 2", 1, "found `Keep`"),
        ("Freedom.score > and", 17, "found `and`"),
        ("Freedom.score >= 1 and", 23, "found the end of the rule"),
        ("[Fair Process.score > 1", 1, "unexpected character '['"),
    ],
)
def test_syntax_errors_with_position(text: str, column: int, fragment: str) -> None:
    err = error_of(f"- {text}")
    assert err.line == 1
    assert err.column == column + 2, str(err)
    assert fragment in err.message, str(err)
    assert err.hint


def test_error_hints() -> None:
    assert "use `==`" in (error_of("Freedom.score = 1").hint or "")
    assert "Freedom.score" in (error_of("Freedom > 1 or Harmony.score > 1").hint or "")
    assert "only `<dimension>.score`" in (error_of("Freedom.level > Harmony.score").hint or "")


def test_error_is_value_error() -> None:
    assert issubclass(DefinitionError, ValueError)
    err = DefinitionError("boom")
    assert str(err) == "boom"
    assert str(DefinitionError("boom", line=2, hint="h")) == "line 2: boom (fix: h)"


def test_code_span_columns() -> None:
    err = error_of("  * `Freedom.score > Nope.score`")
    assert err.column == 22


# ----------------------------------------------------------------------------------------
# property: the parser agrees with an independent evaluator on generated expressions

NAMES = ["a", "B", "c"]
Scores = dict[str, int]


def _score_of(key: str) -> Callable[[Scores], int]:
    return lambda s: s[key]


@st.composite
def num_exprs(draw: st.DrawFn, depth: int = 0) -> tuple[str, Callable[[Scores], int]]:
    kind = draw(
        st.sampled_from(["num", "ref", "ref", "add", "neg"] if depth < 2 else ["num", "ref"])
    )
    if kind == "num":
        n = draw(st.integers(0, 6))
        return str(n), lambda s, n=n: n
    if kind == "ref":
        name = draw(st.sampled_from(NAMES))
        spelled = draw(st.sampled_from([name, name.upper(), name.lower()]))
        form = draw(st.sampled_from(["{}.score", "[{}].score", "{} . SCORE"]))
        return form.format(spelled), _score_of(name.lower())
    if kind == "neg":
        text, fn = draw(num_exprs(depth + 1))
        return f"-({text})", lambda s: -fn(s)
    lt, lf = draw(num_exprs(depth + 1))
    rt, rf = draw(num_exprs(depth + 1))
    op = draw(st.sampled_from(["+", "-"]))
    if op == "+":
        return f"({lt} + {rt})", lambda s: lf(s) + rf(s)
    return f"({lt} - {rt})", lambda s: lf(s) - rf(s)


COMPARATORS: dict[str, Callable[[int, int], bool]] = {
    "==": lambda x, y: x == y,
    "!=": lambda x, y: x != y,
    "<": lambda x, y: x < y,
    "<=": lambda x, y: x <= y,
    ">": lambda x, y: x > y,
    ">=": lambda x, y: x >= y,
}


@st.composite
def bool_exprs(draw: st.DrawFn, depth: int = 0) -> tuple[str, Callable[[Scores], bool]]:
    kind = draw(st.sampled_from(["cmp", "cmp", "and", "or", "not"] if depth < 3 else ["cmp"]))
    if kind == "cmp":
        lt, lf = draw(num_exprs())
        rt, rf = draw(num_exprs())
        op = draw(st.sampled_from(sorted(COMPARATORS)))
        cmp = COMPARATORS[op]
        return f"{lt} {op} {rt}", lambda s: cmp(lf(s), rf(s))
    if kind == "not":
        text, fn = draw(bool_exprs(depth + 1))
        word = draw(st.sampled_from(["not", "NOT", "!"]))
        return f"{word} ({text})", lambda s: not fn(s)
    lt, lf = draw(bool_exprs(depth + 1))
    rt, rf = draw(bool_exprs(depth + 1))
    if kind == "and":
        word = draw(st.sampled_from(["and", "And", "&&"]))
        return f"({lt}) {word} ({rt})", lambda s: lf(s) and rf(s)
    word = draw(st.sampled_from(["or", "OR", "||"]))
    return f"({lt}) {word} ({rt})", lambda s: lf(s) or rf(s)


ALL_SCORES = [
    dict(zip(["a", "b", "c"], values, strict=True))
    for values in itertools.product(range(1, 4), repeat=3)
]


@settings(max_examples=examples(300), deadline=None)
@given(bool_exprs())
def test_parser_matches_reference_evaluator(case: tuple[str, Callable[[Scores], bool]]) -> None:
    text, reference = case
    assume(is_machine_readable(text))  # a line without `.score` is prose by design
    (rule,) = parse_rules(f"- {text}", NAMES).rules
    assert isinstance(rule, Rule)
    # the canonical rendering parses back to the same meaning (precedence is right)
    (again,) = parse_rules(str(rule), NAMES).rules
    for scores in ALL_SCORES:
        assert rule.holds(scores) is reference(scores)
        assert again.holds(scores) is reference(scores)


def test_crlf_and_odd_separators() -> None:
    rules = parse_rules("a.score > 1\r\nprose\x0bmore\r\nb.score > 1", ["a", "b"])
    assert [r.line for r in rules.rules] == [1, 3]
    assert rules.prose == ("prose\x0bmore",)


def test_dashed_names_need_brackets() -> None:
    (rule,) = parse_rules("[Fair-Process].score > 1", ["fair-process"]).rules
    assert rule.dimensions == frozenset({"fair-process"})
    err = error_of("Fair-Process.score > 1", dims=["Fair-Process"])
    assert err.column == 1
    assert "[Fair Process].score" in (err.hint or "")
