"""Expansion of a definition into scenario variants (pure, no I/O).

Mode ``"first"`` reproduces the original ValueRank CLI exactly:

* the full cartesian product of the dimensions' levels, in dimension order, the last
  dimension varying fastest (levels in the definition's order, i.e. by score);
* the first option of every level (a level without options contributes its label);
* scenario id ``<base_id>_<Dim><score>_<Dim><score>…`` (dimension names as written);
* ``base_id`` and ``category`` from the definition;
* ``subject`` = the chosen levels' labels joined by ``", "``;
* ``body`` = the template with surrounding whitespace stripped (``str.strip``; the CLI's
  YAML has no trailing newline, ``|-``), then every ``[Name]`` placeholder whose name is a
  dimension (case-insensitive) replaced by the chosen option, verbatim. Unknown
  placeholders are left as written. Replacement is single-pass, so an option containing
  ``[Other]`` is not expanded again.
* the file's preamble is ``definition.preamble`` unchanged; layout ``"modern"``.

Mode ``"all"`` produces one scenario per option: for each level combination, the product of
the chosen levels' options (dimension order, last varying fastest). **Id scheme:** the
segment of a dimension is ``<Dim><score>`` for the level's first option and
``<Dim><score>o<k>`` for its k-th option, k ≥ 2 (1-based). So a definition whose levels all
have one option expands identically in every mode, mode "first" ⊆ mode "all", and one id
always means one body whatever the mode. Ids are unique: segment *i* is dimension *i*'s
name followed by ``\\d+(o\\d+)?`` which contains no ``_``, and duplicate scores inside a
dimension or duplicate (case-insensitive) dimension names are rejected.

Mode ``"random"`` keeps one scenario per level combination, choosing one option per level
with a ``random.Random`` seeded by ``sha256(f"{seed}:{combination_id}:{dimension}")``
(``combination_id`` = the mode-"first" id), so the choice depends only on the seed, the
combination and the dimension — not on ``PYTHONHASHSEED``, the order of iteration or the
other dimensions. Ids follow the mode-"all" scheme, so a random expansion ⊆ mode "all".
``seed=None`` means seed ``0`` (deterministic by default).

Matching rules (see `valuerank.definitions.rules`) filter the level combinations before
options are expanded. The scores of every scenario's levels are exposed through
`expand_combinations` and `Expansion.dimension_scores`; they are not written into the YAML.
"""

from __future__ import annotations

import hashlib
import itertools
import random
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from valuerank.definitions.errors import DefinitionError
from valuerank.definitions.fixed import (
    FixedScenario,
    fixed_levels,
    fixed_options,
    fixed_scenarios,
)
from valuerank.definitions.rules import RuleSet, rules_for
from valuerank.formats.definition_model import Definition, Dimension, Level
from valuerank.formats.scenarios_model import Scenario, ScenarioFile

__all__ = [
    "Choice",
    "Combination",
    "Expansion",
    "ExpansionMode",
    "expand",
    "expand_combinations",
    "expand_with_scores",
    "fill_template",
    "render_scenario",
    "scenario_bound",
]

ExpansionMode = Literal["first", "all", "random"]
_MODES: tuple[str, ...] = get_args(ExpansionMode)

_PLACEHOLDER_RE = re.compile(r"\[([^\[\]\n]+)\]")


@dataclass(frozen=True)
class Choice:
    """The level (and option) chosen for one dimension in one scenario."""

    dimension: str
    level: Level
    option_index: int = 0  # 0-based index into level.options

    @property
    def score(self) -> int:
        return self.level.score

    @property
    def option(self) -> str:
        """The text put into the template (the level's label when it has no options)."""
        if not self.level.options:
            return self.level.label
        return self.level.options[self.option_index]

    @property
    def base_segment(self) -> str:
        """``<Dim><score>``: this dimension's part of the combination id."""
        return f"{self.dimension}{self.level.score}"

    @property
    def segment(self) -> str:
        """This dimension's part of the scenario id (``o<k>`` suffix for options k ≥ 2)."""
        if self.option_index == 0:
            return self.base_segment
        return f"{self.base_segment}o{self.option_index + 1}"


@dataclass(frozen=True)
class Combination:
    """One scenario to generate: its id and the choice made for every dimension."""

    id: str
    combination_id: str
    choices: tuple[Choice, ...]

    @property
    def scores(self) -> dict[str, int]:
        """Dimension name -> chosen level's score, in dimension order."""
        return {c.dimension: c.score for c in self.choices}

    @property
    def labels(self) -> dict[str, str]:
        return {c.dimension: c.level.label for c in self.choices}

    @property
    def options(self) -> dict[str, str]:
        """Dimension name -> the text put into the template."""
        return {c.dimension: c.option for c in self.choices}

    @property
    def subject(self) -> str:
        return ", ".join(c.level.label for c in self.choices)


@dataclass(frozen=True)
class Expansion:
    """The result of expanding a definition, with per-scenario dimension scores.

    `combinations[i]` describes `scenario_file.scenarios[i]`.
    """

    scenario_file: ScenarioFile
    combinations: tuple[Combination, ...]
    rules: RuleSet
    # A definition of fixed scenarios' rows (definitions/fixed.py), None for any other.
    fixed: Mapping[int, FixedScenario] | None = None

    @property
    def scenarios(self) -> tuple[Scenario, ...]:
        return self.scenario_file.scenarios

    @property
    def dimension_scores(self) -> dict[str, dict[str, int]]:
        """Scenario id -> {dimension name: score}, in scenario order; for fixed scenarios,
        each row's own levels."""
        if self.fixed is not None:
            return {c.id: fixed_levels(self.fixed, c.scores) for c in self.combinations}
        return {c.id: c.scores for c in self.combinations}

    @property
    def prose_rules(self) -> tuple[str, ...]:
        """Matching rules written as prose: reported, not applied."""
        return self.rules.prose


def fill_template(template: str, options: Mapping[str, str]) -> str:
    """Replace every ``[Name]`` whose name is a key of `options` (case-insensitive).

    The template is stripped first, as the CLI does; options are inserted verbatim and
    not expanded again; unknown placeholders stay as written.
    """
    lowered = {name.lower(): value for name, value in options.items()}

    def replace(match: re.Match[str]) -> str:
        return lowered.get(match.group(1).lower(), match.group(0))

    return _PLACEHOLDER_RE.sub(replace, template.strip())


def _validate(definition: Definition, mode: str) -> None:
    if mode not in _MODES:
        raise ValueError(f"unknown expansion mode {mode!r}; use one of {', '.join(_MODES)}")
    seen: dict[str, str] = {}
    for dim in definition.dimensions:
        other = seen.get(dim.name.lower())
        if other is not None:
            raise DefinitionError(
                f"dimensions {other!r} and {dim.name!r} have the same name",
                hint="give every dimension a distinct name (placeholders ignore case)",
            )
        seen[dim.name.lower()] = dim.name
        scores = [lv.score for lv in dim.levels]
        duplicates = sorted({s for s in scores if scores.count(s) > 1})
        if duplicates:
            raise DefinitionError(
                f"dimension {dim.name!r} has several levels with score "
                f"{', '.join(map(str, duplicates))}",
                hint="give every level of a dimension a distinct score",
            )


def _random_index(seed: int | str, combination_id: str, dimension: str, count: int) -> int:
    digest = hashlib.sha256(f"{seed}:{combination_id}:{dimension}".encode()).digest()
    return random.Random(int.from_bytes(digest, "big")).randrange(count)


def _option_indexes(
    mode: str, seed: int | str, combination_id: str, choices: Sequence[Choice]
) -> Iterator[tuple[int, ...]]:
    if mode == "first":
        yield tuple(0 for _ in choices)
    elif mode == "all":
        yield from itertools.product(*(range(max(1, len(c.level.options))) for c in choices))
    else:
        yield tuple(
            _random_index(seed, combination_id, c.dimension, len(c.level.options))
            if len(c.level.options) > 1
            else 0
            for c in choices
        )


def _generate(
    definition: Definition, mode: str, seed: int | str, rules: RuleSet
) -> Iterator[Combination]:
    dimensions: tuple[Dimension, ...] = definition.dimensions
    for levels in itertools.product(*(d.levels for d in dimensions)):
        base = tuple(Choice(d.name, lv) for d, lv in zip(dimensions, levels, strict=True))
        if not rules.allows({c.dimension: c.score for c in base}):
            continue
        combination_id = "_".join([definition.base_id, *(c.base_segment for c in base)])
        for indexes in _option_indexes(mode, seed, combination_id, base):
            choices = tuple(
                Choice(c.dimension, c.level, i) for c, i in zip(base, indexes, strict=True)
            )
            scenario_id = "_".join([definition.base_id, *(c.segment for c in choices)])
            yield Combination(id=scenario_id, combination_id=combination_id, choices=choices)


def expand_combinations(
    definition: Definition,
    mode: ExpansionMode = "first",
    seed: int | str | None = None,
) -> Iterator[Combination]:
    """The scenarios `expand` would produce, as combinations (ids, levels, scores).

    The definition and its matching rules are checked at once (raising `DefinitionError`
    or `ValueError`); the combinations are then generated lazily.
    """
    _validate(definition, mode)
    rules = rules_for(definition)
    return _generate(definition, mode, 0 if seed is None else seed, rules)


def render_scenario(
    definition: Definition,
    combination: Combination,
    fixed: Mapping[int, FixedScenario] | None = None,
) -> Scenario:
    """The scenario of one combination: id, base_id, category, subject, body (for fixed
    scenarios, `fixed_scenarios(definition)`: the row's text and scale as the body)."""
    options = combination.options
    if fixed is not None:
        options = fixed_options(fixed, combination.scores, options)
    return Scenario(
        id=combination.id,
        base_id=definition.base_id,
        category=definition.category,
        subject=combination.subject,
        body=fill_template(definition.template, options),
    )


def expand_with_scores(
    definition: Definition,
    mode: ExpansionMode = "first",
    seed: int | str | None = None,
) -> Expansion:
    """Expand the definition; also return each scenario's combination and the rules."""
    _validate(definition, mode)
    rules = rules_for(definition)
    combinations = tuple(_generate(definition, mode, 0 if seed is None else seed, rules))
    fixed = fixed_scenarios(definition)
    scenario_file = ScenarioFile(
        preamble=definition.preamble,
        scenarios=tuple(render_scenario(definition, c, fixed) for c in combinations),
        layout="modern",
    )
    return Expansion(
        scenario_file=scenario_file, combinations=combinations, rules=rules, fixed=fixed
    )


def expand(
    definition: Definition,
    mode: ExpansionMode = "first",
    seed: int | str | None = None,
) -> ScenarioFile:
    """Expand the definition into a modern-layout scenarios file (see module docstring)."""
    return expand_with_scores(definition, mode, seed).scenario_file


def scenario_bound(definition: Definition, mode: ExpansionMode = "first") -> int:
    """How many scenarios `expand` can produce at most (before matching rules filter), without
    expanding: the product of the levels per dimension, of their options in mode "all"."""
    total = 1
    for dimension in definition.dimensions:
        if mode == "all":
            total *= sum(max(1, len(level.options)) for level in dimension.levels)
        else:
            total *= len(dimension.levels)
    return total
