"""How many jobs a worker claims (queue/claim_ahead.py), with plain values: its free places,
plus jobs claimed ahead when its handlers are short, never holding more than 2(K + A)."""

from __future__ import annotations

import pytest

from valuerank.queue.claim_ahead import claim_sizes, jobs_ahead, moving_duration
from valuerank.queue.settings import QueueSettings

SETTINGS = QueueSettings(claim_ahead=16, claim_ahead_seconds=0.5, heartbeat_seconds=10.0)


def test_nothing_is_claimed_ahead_before_a_handler_returned_or_when_it_is_off() -> None:
    assert jobs_ahead(SETTINGS, 4, None, [], now=100.0) == 0
    off = SETTINGS.model_copy(update={"claim_ahead": 0})
    assert jobs_ahead(off, 4, 0.001, [], now=100.0) == 0


def test_short_jobs_fill_the_budget_up_to_the_ceiling() -> None:
    # Budget: min(0.5 s, heartbeat / 2) × K = 1 s for K = 2.
    assert jobs_ahead(SETTINGS, 2, 0.001, [], now=100.0) == 16  # the ceiling
    assert jobs_ahead(SETTINGS, 2, 0.25, [], now=100.0) == 4
    assert jobs_ahead(SETTINGS, 2, 2.0, [], now=100.0) == 0
    # A handler running longer than the average counts as the job length.
    assert jobs_ahead(SETTINGS, 2, 0.001, [99.5], now=100.0) == 2
    # Half a heartbeat bounds the budget: 0.1 s × 2 at 0.05 s a job.
    quick = SETTINGS.model_copy(update={"heartbeat_seconds": 0.2})
    assert jobs_ahead(quick, 2, 0.05, [], now=100.0) == 4


def test_the_moving_average_starts_at_the_first_and_leans_on_the_past() -> None:
    assert moving_duration(None, 2.0) == 2.0
    assert moving_duration(1.0, 2.0) == pytest.approx(1.2)


def test_claim_sizes() -> None:
    assert claim_sizes(2, 0, in_hand=0, held=0) == (2, 0)
    assert claim_sizes(2, 0, in_hand=2, held=2) == (0, 0)
    assert claim_sizes(2, 0, in_hand=0, held=4) == (0, 0)  # K successes still being written
    assert claim_sizes(2, 4, in_hand=0, held=0) == (2, 4)
    # With jobs waiting, refill only once half of A is free.
    assert claim_sizes(2, 4, in_hand=5, held=5) == (0, 0)
    assert claim_sizes(2, 4, in_hand=4, held=4) == (0, 2)


@pytest.mark.parametrize("k", [1, 2, 5])
@pytest.mark.parametrize("a", [0, 1, 4, 16])
def test_a_claim_never_takes_the_worker_past_its_bounds(k: int, a: int) -> None:
    for in_hand in range(k + a + 1):
        for held in range(in_hand, 2 * (k + a) + 1):
            limit, ahead = claim_sizes(k, a, in_hand, held)
            assert limit >= 0 and ahead >= 0
            assert in_hand + limit + ahead <= k + a
            assert held + limit + ahead <= 2 * (k + a)
            assert limit <= max(0, k - in_hand)
