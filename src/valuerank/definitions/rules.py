"""Matching rules: which combinations of dimension levels a definition keeps.

The raw text of a definition's `# Matching Rules` section is read line by line.

* Blank lines are skipped.
* A leading list marker (`- `, `* `, `+ `, `1. `, `1) `) is removed, and so is a code span
  wrapping the whole rest of the line (`` `A.score > B.score` ``).
* A line is **machine-readable** when it mentions a dimension score, i.e. it contains
  `<name>.score` (or `[Any Name].score`), case-insensitively. Such a line MUST parse as a
  rule; a syntax error or an unknown dimension raises `DefinitionError` naming the line and
  column — it is never silently demoted to prose.
* Every other line is a **prose rule**: kept verbatim (minus the list marker) in
  `RuleSet.prose` for humans and for reports, and not applied.

The expression grammar is in `valuerank.definitions.rule_syntax`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from valuerank.definitions.rule_syntax import BoolExpr, NumExpr, parse_rule

if TYPE_CHECKING:
    from valuerank.formats.definition_model import Definition

T = TypeVar("T")

__all__ = [
    "BoolExpr",
    "NumExpr",
    "Rule",
    "RuleSet",
    "is_machine_readable",
    "parse_rule",
    "parse_rules",
    "rules_for",
]

_BULLET_RE = re.compile(r"^(?:[-*+]|\d+[.)])\s+")
_CODE_SPAN_RE = re.compile(r"^(`+)\s*(.*?)\s*\1$")
_MACHINE_RE = re.compile(r"(?:[^\W\d]\w*|\[[^\[\]\n]*\])\s*\.\s*score\b", re.IGNORECASE)


@dataclass(frozen=True)
class Rule:
    """One machine-readable rule: its text (as written, list marker removed), its line."""

    text: str
    line: int
    expr: BoolExpr

    def holds(self, scores: Mapping[str, int]) -> bool:
        """Whether the rule keeps a combination with these scores (names any case)."""
        return self.expr.holds({k.lower(): v for k, v in scores.items()})

    @property
    def dimensions(self) -> frozenset[str]:
        """The dimensions the rule names (definition spelling)."""
        return self.expr.dimensions()

    def __str__(self) -> str:
        return str(self.expr)


@dataclass(frozen=True)
class RuleSet:
    """The interpreted `# Matching Rules` section."""

    rules: tuple[Rule, ...] = ()
    prose: tuple[str, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.rules and not self.prose

    def allows(self, scores: Mapping[str, int]) -> bool:
        """True when every machine-readable rule holds (always True without rules)."""
        if not self.rules:
            return True
        lowered = {k.lower(): v for k, v in scores.items()}
        return all(rule.expr.holds(lowered) for rule in self.rules)

    def filter(self, items: Iterable[T], scores: Callable[[T], Mapping[str, int]]) -> Iterator[T]:
        """The items whose scores (given by `scores(item)`) every rule allows."""
        for item in items:
            if self.allows(scores(item)):
                yield item


def is_machine_readable(line: str) -> bool:
    """Whether a rule line (list marker and code span already removed) names a score."""
    return _MACHINE_RE.search(line) is not None


def parse_rules(
    text: str | None,
    dimension_names: Iterable[str],
    *,
    first_line: int = 1,
) -> RuleSet:
    """Interpret a `# Matching Rules` section (see the module docstring).

    `dimension_names` are the definition's dimensions; `first_line` is the number given to
    the first line of `text` (default 1: lines counted inside the section), so a caller
    that knows where the section starts in its file can make errors name file lines.
    Lines are split on line feeds only (a trailing carriage return is whitespace).
    """
    if text is None:
        return RuleSet()
    dimensions = list(dimension_names)
    rules: list[Rule] = []
    prose: list[str] = []
    for number, raw in enumerate(text.split("\n"), start=first_line):
        body = raw.strip()
        if not body:
            continue
        offset = len(raw) - len(raw.lstrip())
        bullet = _BULLET_RE.match(body)
        if bullet:
            offset += bullet.end()
            body = body[bullet.end() :]
        span = _CODE_SPAN_RE.match(body)
        if span and is_machine_readable(span.group(2)):
            offset += span.start(2)
            body = span.group(2)
        if is_machine_readable(body):
            expr = parse_rule(body, dimensions, line=number, column_offset=offset)
            rules.append(Rule(text=body, line=number, expr=expr))
        else:
            prose.append(body)
    return RuleSet(rules=tuple(rules), prose=tuple(prose))


def rules_for(definition: Definition) -> RuleSet:
    """The definition's interpreted matching rules."""
    return parse_rules(definition.matching_rules, [d.name for d in definition.dimensions])
