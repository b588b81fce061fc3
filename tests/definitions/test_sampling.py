"""Deterministic nested sampling."""

from __future__ import annotations

import hashlib
import math
import random
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import examples

from valuerank.definitions.sampling import (
    MAX_DRAWN_SEED,
    draw_seed,
    item_id,
    rank_order,
    sample,
    sample_count,
    sample_size,
)
from valuerank.formats.scenarios_model import Scenario

IDS_20 = [f"scenario_{i:03d}" for i in range(1, 21)]
IDS_125 = [
    f"scenario_001_FreedomBelief{a}_FairProcessCompete{b}_HarmonyGroup{c}"
    for a in range(1, 6)
    for b in range(1, 6)
    for c in range(1, 6)
]


def scenario(ident: str) -> Scenario:
    return Scenario(id=ident, base_id="b", category="c", subject="s", body="body")


# ----------------------------------------------------------------------------------------
# pinned outputs: a change here means every stored sampled run changes meaning


def test_fixed_sample_20() -> None:
    assert sample(IDS_20, 25, 42) == [
        "scenario_003",
        "scenario_009",
        "scenario_015",
        "scenario_019",
        "scenario_020",
    ]
    assert rank_order(IDS_20, 42)[:8] == [
        "scenario_003",
        "scenario_019",
        "scenario_020",
        "scenario_015",
        "scenario_009",
        "scenario_013",
        "scenario_018",
        "scenario_014",
    ]


def test_fixed_sample_125() -> None:
    chosen = sample(IDS_125, 10, 42)
    assert [tuple(int(part[-1]) for part in ident.split("_")[2:]) for ident in chosen] == [
        (2, 4, 2),
        (2, 4, 4),
        (3, 1, 1),
        (3, 1, 2),
        (3, 2, 4),
        (4, 1, 3),
        (4, 2, 2),
        (4, 4, 4),
        (4, 5, 1),
        (5, 1, 3),
        (5, 4, 5),
        (5, 5, 3),
    ]


def test_documented_algorithm() -> None:
    """The sample is the k ids with the smallest sha256(f"{seed}:{id}") hex digests."""
    seeds: list[int | str] = [0, 7, "exp"]
    for seed in seeds:

        def rank_key(ident: str, seed: int | str = seed) -> tuple[str, str]:
            return hashlib.sha256(f"{seed}:{ident}".encode()).hexdigest(), ident

        for percentage in (1, 10, 33.3, 50, 100):
            k = max(1, math.floor(len(IDS_125) * Fraction(str(percentage)) / 100))
            ranked = sorted(IDS_125, key=rank_key)
            expected = set(ranked[:k])
            got = sample(IDS_125, percentage, seed)
            assert set(got) == expected
            assert got == [i for i in IDS_125 if i in expected]


# ----------------------------------------------------------------------------------------
# sizes


@pytest.mark.parametrize(
    ("n", "percentage", "k"),
    [
        (10, 10, 1),
        (125, 10, 12),
        (120, 10, 12),
        (5, 10, 1),
        (1, 0.001, 1),
        (0, 50, 0),
        (7, 100, 7),
        (8, 12.5, 1),
        (1000, 0.7, 7),  # 1000 * 0.7 / 100 must not become 6.999…
        (100, 29, 29),
        (100, 57.99, 57),
        (3, 66.67, 2),
        (3, Fraction(200, 3), 2),
        (1000, Decimal("0.1"), 1),
        (10, 99.99, 9),
        (1000, 0.3, 3),
        (100000, 0.07, 70),
    ],
)
def test_sample_size(n: int, percentage: Any, k: int) -> None:
    assert sample_size(n, percentage) == k
    assert len(sample([f"id{i}" for i in range(n)], percentage, 1)) == k


@pytest.mark.parametrize(
    "percentage", [0, -1, 100.0001, 101, float("nan"), float("inf"), Decimal("NaN"), -0.0]
)
def test_invalid_percentage(percentage: Any) -> None:
    with pytest.raises(ValueError, match="percentage"):
        sample(IDS_20, percentage, 1)


@pytest.mark.parametrize("percentage", [True, "10", None, [10]])
def test_percentage_type(percentage: Any) -> None:
    with pytest.raises(TypeError, match="percentage"):
        sample(IDS_20, percentage, 1)


@pytest.mark.parametrize("seed", [True, 1.5, None, b"x"])
def test_seed_type(seed: Any) -> None:
    with pytest.raises(TypeError, match="seed"):
        sample(IDS_20, 50, seed)


def test_sample_size_negative() -> None:
    with pytest.raises(ValueError, match="n must be"):
        sample_size(-1, 50)


def test_empty_input() -> None:
    assert sample([], 10, 1) == []
    assert rank_order([], 1) == []


# ----------------------------------------------------------------------------------------
# kinds of items


def test_scenarios_and_keys() -> None:
    scenarios = [scenario(i) for i in IDS_20]
    chosen = sample(scenarios, 25, 42)
    assert [s.id for s in chosen] == sample(IDS_20, 25, 42)
    assert all(isinstance(s, Scenario) for s in chosen)
    pairs = [(i, n) for n, i in enumerate(IDS_20)]
    keyed = sample(pairs, 25, 42, key=lambda p: p[0])
    assert [p[0] for p in keyed] == sample(IDS_20, 25, 42)


def test_item_id() -> None:
    assert item_id("x") == "x"
    assert item_id(scenario("y")) == "y"
    with pytest.raises(TypeError, match="pass key="):
        item_id(3)


def test_seed_str_and_int_agree() -> None:
    assert sample(IDS_125, 20, 5) == sample(IDS_125, 20, "5")
    assert sample(IDS_125, 20, 5) != sample(IDS_125, 20, 6)


def test_duplicates_are_kept_apart() -> None:
    items = ["a", "a", "b", "c"]
    assert sorted(rank_order(items, 1)) == sorted(items)
    assert len(sample(items, 50, 1)) == 2
    assert sample(items, 100, 1) == items


def test_input_order_is_kept() -> None:
    reversed_ids = list(reversed(IDS_125))
    chosen = sample(reversed_ids, 30, 3)
    assert chosen == [i for i in reversed_ids if i in set(sample(IDS_125, 30, 3))]


# ----------------------------------------------------------------------------------------
# properties

ids_lists = st.lists(st.text(min_size=1, max_size=12), min_size=0, max_size=60, unique=True)
seeds = st.one_of(st.integers(-(2**70), 2**70), st.text(max_size=10))
percentages = st.one_of(
    st.integers(1, 100),
    st.floats(min_value=0.01, max_value=100, allow_nan=False),
    st.fractions(min_value=Fraction(1, 1000), max_value=100),
)


@settings(max_examples=examples(300), deadline=None)
@given(ids_lists, seeds, percentages, percentages)
def test_nested(ids: list[str], seed: int | str, p1: Any, p2: Any) -> None:
    low, high = sorted([p1, p2], key=lambda p: Fraction(repr(p)) if isinstance(p, float) else p)
    small = sample(ids, low, seed)
    large = sample(ids, high, seed)
    assert set(small) <= set(large) <= set(ids)
    assert set(sample(ids, 100, seed)) == set(ids)


@settings(max_examples=examples(300), deadline=None)
@given(ids_lists, seeds, percentages, st.randoms(use_true_random=False))
def test_size_determinism_and_order(
    ids: list[str], seed: int | str, percentage: Any, rnd: random.Random
) -> None:
    chosen = sample(ids, percentage, seed)
    exact = Fraction(repr(percentage)) if isinstance(percentage, float) else Fraction(percentage)
    expected_k = 0 if not ids else max(1, math.floor(len(ids) * exact / 100))
    assert len(chosen) == expected_k
    assert chosen == sample(list(ids), percentage, seed)
    positions = [ids.index(i) for i in chosen]
    assert positions == sorted(positions)
    shuffled = list(ids)
    rnd.shuffle(shuffled)
    assert set(sample(shuffled, percentage, seed)) == set(chosen)
    assert rank_order(ids, seed)[:expected_k] == sorted(chosen, key=rank_order(ids, seed).index)


def test_sample_count_is_the_rank_order_prefix_in_input_order() -> None:
    ids = [f"s{i:02d}" for i in range(20)]
    ranked = rank_order(ids, 7)
    for count in (1, 5, 19, 20):
        chosen = sample_count(ids, count, 7)
        assert chosen == [i for i in ids if i in ranked[:count]]
    # The same nested samples as `sample`: 25 % of 20 is the first 5 in rank order.
    assert sample_count(ids, 5, 7) == sample(ids, 25, 7)
    assert sample_count(ids, 50, 7) == ids  # more than there are: all of them
    assert sample_count([], 3, 7) == []
    assert sample_count(ids, 3, "7") == sample_count(ids, 3, 7)


@pytest.mark.parametrize("count", [0, -1, True, 2.0, "3", None])
def test_sample_count_refuses_a_count_below_one_or_not_an_integer(count: Any) -> None:
    with pytest.raises(ValueError, match="count must be an integer >= 1"):
        sample_count(["a", "b"], count, 1)


def test_draw_seed_is_a_fresh_seed_every_json_reader_holds() -> None:
    seeds = {draw_seed() for _ in range(200)}
    assert all(isinstance(s, int) and 0 <= s <= MAX_DRAWN_SEED for s in seeds)
    assert MAX_DRAWN_SEED == 2**31 - 1
    assert len(seeds) > 190  # drawn afresh, not a constant or a small set
    assert max(seeds) > 2**24  # spread over the range, not only its start


def test_errors_name_the_type_that_was_given() -> None:
    with pytest.raises(TypeError, match=r"^cannot take the id of int; pass key= to sample\(\)$"):
        item_id(3)
    with pytest.raises(TypeError, match=r"^percentage must be a number, not str$"):
        sample(IDS_20, "10", 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^seed must be an int or a str, not float$"):
        sample(IDS_20, 10, 1.5)  # type: ignore[arg-type]


def test_rank_order_and_sample_count_use_the_key_given() -> None:
    """Items without an ``id`` (rows as dicts) are ranked by the key, as plain ids would be."""
    rows = [{"name": ident} for ident in IDS_20]
    by_name = [row["name"] for row in rank_order(rows, 42, key=lambda row: row["name"])]
    assert by_name == rank_order(IDS_20, 42)
    chosen = sample_count(rows, 5, 42, key=lambda row: row["name"])
    assert [row["name"] for row in chosen] == sample_count(IDS_20, 5, 42)
