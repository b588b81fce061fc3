"""The consensus reads' cache keeps tasks' heads only while it is told of every change
(`trusted`), never keeps a head read before a change it has heard of, and forgets one task's
head, or all of them, as told."""

from __future__ import annotations

from valuerank.validation.cache import ReadCache, TaskHead

ORG, OTHER = "org-1", "org-2"


def _cache(trusted: list[bool]) -> ReadCache:
    return ReadCache(trusted=lambda: trusted[0])


def test_heads_are_kept_and_used_only_while_trusted() -> None:
    trusted = [False]
    cache = _cache(trusted)
    cache.keep_head(7, TaskHead(ORG, 3, "Auth"), cache.generation)
    assert cache.head(ORG, 7) is None  # not kept: nobody listens
    trusted[0] = True
    cache.keep_head(7, TaskHead(ORG, 3, "Auth"), cache.generation)
    assert cache.head(ORG, 7) == TaskHead(ORG, 3, "Auth")
    trusted[0] = False
    assert cache.head(ORG, 7) is None  # kept, but not used while the listener is away


def test_a_head_is_another_organisations_never() -> None:
    cache = _cache([True])
    cache.keep_head(7, TaskHead(ORG, 3, "Auth"), cache.generation)
    assert cache.head(OTHER, 7) is None


def test_a_head_read_before_a_change_is_not_kept() -> None:
    cache = _cache([True])
    before = cache.generation  # a read starts, then a change is heard of
    cache.forget("9")
    cache.keep_head(7, TaskHead(ORG, 3, "Auth"), before)
    assert cache.head(ORG, 7) is None


def test_forget_one_task_or_all() -> None:
    cache = _cache([True])
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
