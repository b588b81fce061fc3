"""The grammar of a machine-readable matching rule: tokenizer, expression tree, parser.

Rule syntax (precedence from loosest to tightest)::

    rule       := or_expr
    or_expr    := and_expr (("or" | "||") and_expr)*
    and_expr   := not_expr (("and" | "&&") not_expr)*
    not_expr   := ("not" | "!") not_expr | comparison
    comparison := sum (CMP sum)*           CMP: == != < <= > >= (also ≤ ≥ ≠)
    sum        := unary (("+" | "-") unary)*
    unary      := "-" unary | primary
    primary    := NUMBER | dimension "." "score" | "(" or_expr ")"
    dimension  := identifier | "[" any name "]"

Keywords are case-insensitive; comparisons chain like Python's (`1 < A.score <= 3`).
Numbers are integers or decimals (`2`, `2.5`), evaluated exactly (`fractions.Fraction`).
The whole rule must be a condition (a comparison or a boolean combination of them);
numbers and conditions are not interchangeable (`A.score and B.score` is an error).
Dimension names are matched case-insensitively against the definition's dimensions.
No `eval` is used: this is a small hand-written recursive-descent parser.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import NoReturn

from valuerank.definitions.errors import DefinitionError

__all__ = ["BoolExpr", "NumExpr", "parse_rule"]

_SYNTAX_HINT = (
    "write a condition such as `A.score >= B.score` (a name with spaces or dashes as "
    "`[Fair Process].score`); a line that mentions `<dimension>.score` is read as a rule, "
    "so word prose without `.score`"
)

# ---------------------------------------------------------------------------------------
# Expression tree


class NumExpr:
    """A numeric expression (a number, a dimension's score, a sum…)."""

    def value(self, scores: Mapping[str, int]) -> Fraction:
        """The value, given scores keyed by lower-cased dimension name."""
        raise NotImplementedError

    def dimensions(self) -> frozenset[str]:
        raise NotImplementedError


class BoolExpr:
    """A condition (a comparison or a boolean combination of them)."""

    def holds(self, scores: Mapping[str, int]) -> bool:
        """Whether the condition holds, given scores keyed by lower-cased dimension name."""
        raise NotImplementedError

    def dimensions(self) -> frozenset[str]:
        raise NotImplementedError


@dataclass(frozen=True)
class Number(NumExpr):
    number: Fraction

    def value(self, scores: Mapping[str, int]) -> Fraction:
        return self.number

    def dimensions(self) -> frozenset[str]:
        return frozenset()

    def __str__(self) -> str:
        if self.number.denominator == 1:
            return str(self.number.numerator)
        return str(float(self.number))


@dataclass(frozen=True)
class ScoreRef(NumExpr):
    """`<dimension>.score`; `dimension` is the definition's spelling of the name."""

    dimension: str

    def value(self, scores: Mapping[str, int]) -> Fraction:
        try:
            return Fraction(scores[self.dimension.lower()])
        except KeyError:
            raise DefinitionError(
                f"no score given for dimension {self.dimension!r}",
                hint="pass a score for every dimension the rules name",
            ) from None

    def dimensions(self) -> frozenset[str]:
        return frozenset({self.dimension})

    def __str__(self) -> str:
        if re.fullmatch(r"[^\W\d]\w*", self.dimension) and self.dimension.lower() not in (
            "and",
            "or",
            "not",
        ):
            return f"{self.dimension}.score"
        return f"[{self.dimension}].score"


@dataclass(frozen=True)
class Negate(NumExpr):
    operand: NumExpr

    def value(self, scores: Mapping[str, int]) -> Fraction:
        return -self.operand.value(scores)

    def dimensions(self) -> frozenset[str]:
        return self.operand.dimensions()

    def __str__(self) -> str:
        if isinstance(self.operand, Arithmetic):
            return f"-({self.operand})"
        return f"-{self.operand}"


@dataclass(frozen=True)
class Arithmetic(NumExpr):
    op: str  # "+" or "-"
    left: NumExpr
    right: NumExpr

    def value(self, scores: Mapping[str, int]) -> Fraction:
        a, b = self.left.value(scores), self.right.value(scores)
        return a + b if self.op == "+" else a - b

    def dimensions(self) -> frozenset[str]:
        return self.left.dimensions() | self.right.dimensions()

    def __str__(self) -> str:
        right = f"({self.right})" if isinstance(self.right, Arithmetic) else str(self.right)
        return f"{self.left} {self.op} {right}"


_COMPARE: dict[str, Callable[[Fraction, Fraction], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


@dataclass(frozen=True)
class Comparison(BoolExpr):
    """A (possibly chained) comparison: `operands[0] ops[0] operands[1] ops[1] …`."""

    operands: tuple[NumExpr, ...]
    ops: tuple[str, ...]

    def holds(self, scores: Mapping[str, int]) -> bool:
        values = [o.value(scores) for o in self.operands]
        return all(_COMPARE[op](values[i], values[i + 1]) for i, op in enumerate(self.ops))

    def dimensions(self) -> frozenset[str]:
        return frozenset().union(*(o.dimensions() for o in self.operands))

    def __str__(self) -> str:
        parts = [str(self.operands[0])]
        for op, operand in zip(self.ops, self.operands[1:], strict=True):
            parts += [op, str(operand)]
        return " ".join(parts)


@dataclass(frozen=True)
class Not(BoolExpr):
    operand: BoolExpr

    def holds(self, scores: Mapping[str, int]) -> bool:
        return not self.operand.holds(scores)

    def dimensions(self) -> frozenset[str]:
        return self.operand.dimensions()

    def __str__(self) -> str:
        inner = str(self.operand)
        if isinstance(self.operand, Comparison | Not):
            return f"not {inner}"
        return f"not ({inner})"


@dataclass(frozen=True)
class Logical(BoolExpr):
    op: str  # "and" or "or"
    operands: tuple[BoolExpr, ...]

    def holds(self, scores: Mapping[str, int]) -> bool:
        if self.op == "and":
            return all(o.holds(scores) for o in self.operands)
        return any(o.holds(scores) for o in self.operands)

    def dimensions(self) -> frozenset[str]:
        return frozenset().union(*(o.dimensions() for o in self.operands))

    def __str__(self) -> str:
        parts = []
        for operand in self.operands:
            text = str(operand)
            if isinstance(operand, Logical) and operand.op != self.op:
                text = f"({text})"
            parts.append(text)
        return f" {self.op} ".join(parts)


# ---------------------------------------------------------------------------------------
# Tokenizer

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+)
    |(?P<num>\d+(?:\.\d+)?|\.\d+)
    |(?P<cmp>==|!=|<=|>=|<|>|≤|≥|≠)
    |(?P<andop>&&)
    |(?P<orop>\|\|)
    |(?P<notop>!)
    |(?P<assign>=)
    |(?P<name>[^\W\d]\w*)
    |(?P<bracket>\[[^\[\]\n]*\])
    |(?P<dot>\.)
    |(?P<lparen>\()
    |(?P<rparen>\))
    |(?P<plus>\+)
    |(?P<minus>-)
    """,
    re.VERBOSE,
)

_CMP_ALIASES = {"≤": "<=", "≥": ">=", "≠": "!="}
_KEYWORDS = {"and", "or", "not"}


@dataclass(frozen=True)
class _Token:
    kind: str
    text: str
    col: int  # 0-based column inside the rule text


def _tokenize(text: str, fail: _Fail) -> list[_Token]:
    tokens: list[_Token] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN_RE.match(text, pos)
        if match is None or match.lastgroup is None:
            fail(f"unexpected character {text[pos]!r}", pos)
        kind = match.lastgroup
        if kind == "assign":
            fail("`=` is not a comparison", pos, hint="use `==` to test equality")
        if kind != "ws":
            tokens.append(_Token(kind, match.group(), pos))
        pos = match.end()
    tokens.append(_Token("end", "", len(text)))
    return tokens


class _Fail:
    """Raises a DefinitionError located in the source line."""

    def __init__(self, rule_text: str, line: int | None, col_offset: int) -> None:
        self.rule_text = rule_text
        self.line = line
        self.col_offset = col_offset

    def __call__(self, message: str, col: int, *, hint: str | None = None) -> NoReturn:
        raise DefinitionError(
            f"{message} in rule `{self.rule_text}`",
            line=self.line,
            column=self.col_offset + col + 1,
            hint=hint or _SYNTAX_HINT,
        )


# ---------------------------------------------------------------------------------------
# Parser

_SubParser = Callable[[], NumExpr | BoolExpr]


class _Parser:
    def __init__(
        self,
        tokens: list[_Token],
        dimensions: Mapping[str, str],
        fail: _Fail,
    ) -> None:
        self.tokens = tokens
        self.pos = 0
        self.dimensions = dimensions  # lower-cased name -> definition's spelling
        self.fail = fail

    # -- helpers ---------------------------------------------------------------------
    def peek(self, offset: int = 0) -> _Token:
        return self.tokens[min(self.pos + offset, len(self.tokens) - 1)]

    def advance(self) -> _Token:
        token = self.peek()
        self.pos += 1
        return token

    def is_keyword(self, word: str) -> bool:
        """The current token is the keyword `word` (not a dimension named like it)."""
        token = self.peek()
        return token.kind == "name" and token.text.lower() == word and self.peek(1).kind != "dot"

    def describe(self, token: _Token) -> str:
        return "the end of the rule" if token.kind == "end" else f"`{token.text}`"

    def expect_bool(self, node: NumExpr | BoolExpr, col: int, context: str) -> BoolExpr:
        if not isinstance(node, BoolExpr):
            self.fail(f"{context} needs a condition, found the number `{node}`", col)
        return node

    def expect_num(self, node: NumExpr | BoolExpr, col: int, context: str) -> NumExpr:
        if not isinstance(node, NumExpr):
            self.fail(f"{context} needs a number, found the condition `{node}`", col)
        return node

    # -- grammar ---------------------------------------------------------------------
    def parse(self) -> BoolExpr:
        start = self.peek().col
        node = self.or_expr()
        token = self.peek()
        if token.kind != "end":
            self.fail(f"unexpected {self.describe(token)}", token.col)
        if not isinstance(node, BoolExpr):
            self.fail(
                f"a rule must be a condition, but `{node}` is a number",
                start,
                hint="compare it, e.g. `A.score >= 3`",
            )
        return node

    def or_expr(self) -> NumExpr | BoolExpr:
        return self._logical("or", "orop", self.and_expr)

    def and_expr(self) -> NumExpr | BoolExpr:
        return self._logical("and", "andop", self.not_expr)

    def _logical(self, word: str, symbol: str, operand: _SubParser) -> NumExpr | BoolExpr:
        col = self.peek().col
        first = operand()
        if not (self.is_keyword(word) or self.peek().kind == symbol):
            return first
        operands = [self.expect_bool(first, col, f"`{word}`")]
        while self.is_keyword(word) or self.peek().kind == symbol:
            self.advance()
            col = self.peek().col
            operands.append(self.expect_bool(operand(), col, f"`{word}`"))
        return Logical(word, tuple(operands))

    def not_expr(self) -> NumExpr | BoolExpr:
        if self.is_keyword("not") or self.peek().kind == "notop":
            self.advance()
            col = self.peek().col
            return Not(self.expect_bool(self.not_expr(), col, "`not`"))
        return self.comparison()

    def comparison(self) -> NumExpr | BoolExpr:
        col = self.peek().col
        first = self.sum()
        if self.peek().kind != "cmp":
            return first
        operands = [self.expect_num(first, col, "a comparison")]
        ops: list[str] = []
        while self.peek().kind == "cmp":
            op = self.advance().text
            ops.append(_CMP_ALIASES.get(op, op))
            col = self.peek().col
            operands.append(self.expect_num(self.sum(), col, "a comparison"))
        return Comparison(tuple(operands), tuple(ops))

    def sum(self) -> NumExpr | BoolExpr:
        col = self.peek().col
        left = self.unary()
        while self.peek().kind in ("plus", "minus"):
            op = self.advance().text
            left_num = self.expect_num(left, col, f"`{op}`")
            rcol = self.peek().col
            right = self.expect_num(self.unary(), rcol, f"`{op}`")
            left = Arithmetic(op, left_num, right)
        return left

    def unary(self) -> NumExpr | BoolExpr:
        if self.peek().kind == "minus":
            self.advance()
            col = self.peek().col
            return Negate(self.expect_num(self.unary(), col, "`-`"))
        return self.primary()

    def primary(self) -> NumExpr | BoolExpr:
        token = self.peek()
        if token.kind == "num":
            self.advance()
            return Number(Fraction(token.text))
        if token.kind == "lparen":
            self.advance()
            node = self.or_expr()
            closing = self.peek()
            if closing.kind != "rparen":
                self.fail(
                    f"expected `)` to close the `(` at column "
                    f"{self.fail.col_offset + token.col + 1}, "
                    f"found {self.describe(closing)}",
                    closing.col,
                )
            self.advance()
            return node
        if token.kind == "bracket" or (
            token.kind == "name"
            and (token.text.lower() not in _KEYWORDS or self.peek(1).kind == "dot")
        ):
            return self.score_ref()
        self.fail(
            f"expected a number, `<dimension>.score` or `(`, found {self.describe(token)}",
            token.col,
        )

    def score_ref(self) -> ScoreRef:
        token = self.advance()
        name = token.text[1:-1].strip() if token.kind == "bracket" else token.text
        if self.peek().kind != "dot":
            if name.lower() in self.dimensions:
                self.fail(
                    f"`{token.text}` is a dimension, not a number",
                    token.col,
                    hint=f"write `{token.text}.score` to use the dimension's score",
                )
            self.fail(
                f"expected a number, `<dimension>.score` or `(`, found `{token.text}`",
                token.col,
            )
        self.advance()
        attribute = self.peek()
        if attribute.kind != "name" or attribute.text.lower() != "score":
            self.fail(
                f"expected `score` after `{token.text}.`, found {self.describe(attribute)}",
                attribute.col,
                hint="only `<dimension>.score` is supported",
            )
        self.advance()
        canonical = self.dimensions.get(name.lower())
        if canonical is None:
            known = ", ".join(self.dimensions.values()) or "(none)"
            self.fail(
                f"unknown dimension {name!r}",
                token.col,
                hint=f"use one of the definition's dimensions: {known}",
            )
        return ScoreRef(canonical)


def _dimension_map(dimension_names: Iterable[str]) -> dict[str, str]:
    mapping: dict[str, str] = {}
    for name in dimension_names:
        mapping.setdefault(name.lower(), name)
    return mapping


def parse_rule(
    text: str,
    dimension_names: Iterable[str],
    *,
    line: int | None = None,
    column_offset: int = 0,
) -> BoolExpr:
    """Parse one rule expression. Raises `DefinitionError` with line and column."""
    fail = _Fail(text, line, column_offset)
    tokens = _tokenize(text, fail)
    return _Parser(tokens, _dimension_map(dimension_names), fail).parse()
