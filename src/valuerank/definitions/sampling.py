"""Deterministic, nested sampling of scenarios (partial runs, progressive rollout).

Algorithm (the contract — changing it changes which scenarios every stored run sampled):

1. Every item gets the rank key ``(sha256(f"{seed}:{item_id}".encode("utf-8")).hexdigest(),
   item_id, position)``; items are ordered by that key. The order depends only on the seed
   and the ids: not on the machine, the Python version, ``PYTHONHASHSEED`` or the input order
   (``position``, the index in the input, only separates duplicate ids).
2. The sample size is ``k = max(1, floor(n * p / 100))`` for ``0 < p <= 100`` (``k = 0``
   when ``n = 0``). ``p`` is taken exactly: an ``int``, a ``Fraction``, a ``Decimal``, or a
   ``float`` read through its shortest decimal ``repr`` (``12.5`` means 25/2), so no
   binary rounding can shift ``k``.
3. The sample is the first ``k`` items in rank order, returned in their input order.

Because the rank order does not depend on ``p`` and ``k`` grows with ``p``, samples are
nested: for one seed and one set of ids, the 10% sample ⊂ the 50% sample ⊂ the 100% sample
(= everything), and "expand to a full run" means running ``rank_order(...)[k:]``.
"""

from __future__ import annotations

import hashlib
import math
import secrets
from collections.abc import Callable, Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any, TypeVar

__all__ = [
    "MAX_DRAWN_SEED",
    "Percentage",
    "Seed",
    "draw_seed",
    "item_id",
    "rank_order",
    "sample",
    "sample_count",
    "sample_size",
]

T = TypeVar("T")

Seed = int | str
Percentage = int | float | Fraction | Decimal


# Seeds drawn when the user gives none: non-negative and small enough for every JSON reader.
MAX_DRAWN_SEED = 2**31 - 1
# Seeds a user may give over HTTP: integers a JSON reader holds exactly (2**53 - 1: a
# JavaScript client, or a schema checker comparing as floats, rounds anything larger).
MAX_SEED = 2**53 - 1


def draw_seed() -> int:
    """A fresh random seed for a sample the user asked for without one. Whoever draws it
    stores and shows it, so the sample can be drawn again."""
    return secrets.randbelow(MAX_DRAWN_SEED + 1)


def item_id(item: object) -> str:
    """The default key: a string is its own id; otherwise the item's ``id`` attribute."""
    if isinstance(item, str):
        return item
    value: Any = getattr(item, "id", None)
    if value is None:
        raise TypeError(f"cannot take the id of {type(item).__name__}; pass key= to sample()")
    return str(value)


def _exact_percentage(percentage: Percentage) -> Fraction:
    if isinstance(percentage, bool) or not isinstance(percentage, int | float | Fraction | Decimal):
        raise TypeError(f"percentage must be a number, not {type(percentage).__name__}")
    if isinstance(percentage, float):
        if not math.isfinite(percentage):
            raise ValueError(f"percentage must be finite, got {percentage!r}")
        exact = Fraction(repr(percentage))
    elif isinstance(percentage, Decimal):
        if not percentage.is_finite():
            raise ValueError(f"percentage must be finite, got {percentage!r}")
        exact = Fraction(percentage)
    else:
        exact = Fraction(percentage)
    if not 0 < exact <= 100:
        raise ValueError(f"percentage must be > 0 and <= 100, got {percentage}")
    return exact


def _check_seed(seed: Seed) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int | str):
        raise TypeError(f"seed must be an int or a str, not {type(seed).__name__}")


def sample_size(n: int, percentage: Percentage) -> int:
    """``max(1, floor(n * p / 100))`` computed exactly; 0 when ``n`` is 0."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    exact = _exact_percentage(percentage)
    if n == 0:
        return 0
    return max(1, math.floor(n * exact / 100))


def _ranked_positions(items: Sequence[T], seed: Seed, key: Callable[[T], str] | None) -> list[int]:
    _check_seed(seed)
    get_id: Callable[[T], str] = key if key is not None else item_id
    keys = []
    for position, item in enumerate(items):
        ident = get_id(item)
        digest = hashlib.sha256(f"{seed}:{ident}".encode()).hexdigest()
        keys.append((digest, ident, position))
    keys.sort()
    return [position for _, _, position in keys]


def rank_order(items: Sequence[T], seed: Seed, key: Callable[[T], str] | None = None) -> list[T]:
    """All items in sampling rank order: the first k of it are the k-item sample."""
    return [items[i] for i in _ranked_positions(items, seed, key)]


def sample(
    items: Sequence[T],
    percentage: Percentage,
    seed: Seed,
    key: Callable[[T], str] | None = None,
) -> list[T]:
    """The deterministic nested sample of `items` (see the module docstring).

    `items` may be `Scenario` objects (or anything with an ``id``), plain id strings, or
    anything else with `key` giving its id. The result keeps the input order.
    """
    k = sample_size(len(items), percentage)
    chosen = sorted(_ranked_positions(items, seed, key)[:k])
    return [items[i] for i in chosen]


def sample_count(
    items: Sequence[T],
    count: int,
    seed: Seed,
    key: Callable[[T], str] | None = None,
) -> list[T]:
    """The first `count` items in rank order (all of them when there are fewer), in input
    order: the same nested samples as `sample`, sized by a count instead of a percentage."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"count must be an integer >= 1, got {count!r}")
    chosen = sorted(_ranked_positions(items, seed, key)[:count])
    return [items[i] for i in chosen]
