"""Expansion: what the user is told about a bad definition, the default random seed, levels
with exactly two options in mode "random", and the size bound computed without expanding."""

from __future__ import annotations

import re

import pytest
from tests.definitions.test_expansion import MULTI, dim, make

from valuerank.definitions.errors import DefinitionError
from valuerank.definitions.expansion import (
    expand,
    expand_combinations,
    expand_with_scores,
    scenario_bound,
)


def test_a_bad_definition_says_what_is_wrong_and_how_to_fix_it() -> None:
    with pytest.raises(DefinitionError) as same_name:
        expand(make(dim("A", (1, "x")), dim("a", (1, "y"))))
    assert same_name.value.hint == (
        "give every dimension a distinct name (placeholders ignore case)"
    )
    with pytest.raises(DefinitionError) as same_score:
        expand(make(dim("A", (2, "x"), (2, "y"), (3, "z"), (3, "w"))))
    assert str(same_score.value).startswith("dimension 'A' has several levels with score 2, 3")
    assert same_score.value.hint == "give every level of a dimension a distinct score"
    expected = "unknown expansion mode 'some'; use one of first, all, random"
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
        expand(make(dim("A", (1, "x"))), mode="some")  # type: ignore[arg-type]


def test_no_seed_is_seed_0_in_every_entry_point() -> None:
    ids = [c.id for c in expand_combinations(MULTI, mode="random")]
    assert ids == [c.id for c in expand_combinations(MULTI, mode="random", seed=0)]
    assert ids == [c.id for c in expand_with_scores(MULTI, mode="random").combinations]


def test_a_level_with_two_options_can_draw_its_second() -> None:
    two = make(dim("A", (1, "low", ("p", "q"))), template="[A]")
    bodies = {expand(two, mode="random", seed=seed).scenarios[0].body for seed in range(20)}
    assert bodies == {"p", "q"}


def test_scenario_bound_is_the_count_before_rules() -> None:
    # MULTI: A has 2 levels (3 and 1 options), B has 2 levels (2 options and none).
    assert scenario_bound(MULTI) == 4
    assert scenario_bound(MULTI, "random") == 4
    assert scenario_bound(MULTI, "all") == (3 + 1) * (2 + 1) == len(expand(MULTI, "all").scenarios)
    assert scenario_bound(make()) == 1
    ruled = make(dim("A", (1, "x"), (2, "y")), dim("B", (1, "u"), (2, "v")), rules="A.score == 2")
    assert scenario_bound(ruled) == 4  # an upper bound: the rule keeps 2
    assert len(expand(ruled).scenarios) == 2
