"""Cursors round-trip, and anything else is refused with INVALID_CURSOR."""

from __future__ import annotations

import pytest

from valuerank.api.pagination import (
    InvalidCursorError,
    decode_cursor,
    encode_cursor,
    page,
)


def test_a_cursor_round_trips_its_key() -> None:
    key = ["2026-11-25T10:00:00+00:00", "3f2a"]
    assert decode_cursor(encode_cursor(key), arity=2) == key


@pytest.mark.parametrize("bad", ["!!!", "bm90IGpzb24", encode_cursor([1]), "x" * 3000])
def test_foreign_cursors_are_refused(bad: str) -> None:
    with pytest.raises(InvalidCursorError) as info:
        decode_cursor(bad, arity=2)
    assert info.value.code == "INVALID_CURSOR"


def test_a_page_has_a_cursor_only_when_there_is_more() -> None:
    rows = [{"id": i} for i in range(4)]
    full = page("items", rows, limit=3, key=lambda r: [r["id"]])
    assert full["count"] == 3
    assert decode_cursor(full["next_cursor"], arity=1) == [2]
    last = page("items", rows[:2], limit=3, key=lambda r: [r["id"]])
    assert last == {"items": rows[:2], "count": 2, "next_cursor": None}
