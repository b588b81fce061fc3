"""A notified cache serves and keeps values only while trusted (its process hears every
change), never keeps a value read before a change it has heard of, and forgets one key or
all of them as told."""

from __future__ import annotations

from valuerank.notified_cache import NotifiedCache


def _cache(trusted: list[bool]) -> NotifiedCache[int, str]:
    return NotifiedCache(ttl_seconds=300, max_entries=10, trusted=lambda: trusted[0])


def test_values_are_kept_and_served_only_while_trusted() -> None:
    trusted = [False]
    cache = _cache(trusted)
    cache.keep(7, "a", cache.generation)
    assert cache.get(7) is None and len(cache) == 0  # not kept: nobody listens
    trusted[0] = True
    cache.keep(7, "a", cache.generation)
    assert cache.get(7) == "a"
    trusted[0] = False
    assert cache.get(7) is None  # kept, but not served while the listener is away


def test_a_value_read_before_a_change_is_not_kept() -> None:
    cache = _cache([True])
    before = cache.generation  # a read starts, then a change is heard of
    cache.forget(9)
    cache.keep(7, "a", before)
    assert cache.get(7) is None


def test_forget_one_key_or_all() -> None:
    cache = _cache([True])
    for key in (7, 8):
        cache.keep(key, "a", cache.generation)
    cache.forget(7)
    assert cache.get(7) is None and cache.get(8) == "a"
    cache.forget()
    assert cache.get(8) is None and len(cache) == 0
