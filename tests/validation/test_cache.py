"""The consensus reads' cache keeps tasks' heads while told of every change
(tests/test_notified_cache.py): a head is never another organisation's, and a notice's
payload names the task to forget (an empty one, from a TRUNCATE, or none: every task)."""

from __future__ import annotations

from valuerank.validation.cache import ReadCache, TaskHead

ORG, OTHER = "org-1", "org-2"


def _cache() -> ReadCache:
    return ReadCache(trusted=lambda: True)


def test_a_head_is_another_organisations_never() -> None:
    cache = _cache()
    cache.keep_head(7, TaskHead(ORG, 3, "Auth"), cache.generation)
    assert cache.head(ORG, 7) == TaskHead(ORG, 3, "Auth")
    assert cache.head(OTHER, 7) is None


def test_untrusted_heads_are_neither_kept_nor_served() -> None:
    cache = ReadCache()  # by default nobody tells it of changes
    cache.keep_head(7, TaskHead(ORG, 3, "Auth"), cache.generation)
    assert cache.head(ORG, 7) is None


def test_a_head_read_before_a_change_is_not_kept() -> None:
    cache = _cache()
    before = cache.generation
    cache.forget("9")
    cache.keep_head(7, TaskHead(ORG, 3, "Auth"), before)
    assert cache.head(ORG, 7) is None


def test_forget_the_notices_task_or_all() -> None:
    cache = _cache()
    for task in (7, 8):
        cache.keep_head(task, TaskHead(ORG, 1, "t"), cache.generation)
    cache.forget("7")
    assert cache.head(ORG, 7) is None and cache.head(ORG, 8) is not None
    cache.forget("")  # TRUNCATE: any task
    assert cache.head(ORG, 8) is None
    cache.keep_head(8, TaskHead(ORG, 1, "t"), cache.generation)
    cache.forget(None)  # the listener (re)connected: anything may have changed
    assert cache.head(ORG, 8) is None
    cache.keep_head(8, TaskHead(ORG, 1, "t"), cache.generation)
    cache.clear()
    assert cache.head(ORG, 8) is None
