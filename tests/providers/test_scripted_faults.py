"""The scripted models' injected faults keep their memory in a `FaultState`: providers share
the process's by default (one rate limit per model id, as a real provider's), and one given
its own state counts apart, so a test or a benchmark can isolate its models."""

from __future__ import annotations

import pytest

from valuerank.providers.base import (
    CompletionRequest,
    Message,
    ProviderRateLimited,
    ProviderTransient,
)
from valuerank.providers.scripted import ScriptedProvider
from valuerank.providers.scripted_faults import PROCESS_FAULTS, FaultState

MODEL = "neutral?rate_limit_rpm=2"


def _request(seed: int) -> CompletionRequest:
    return CompletionRequest(
        model=MODEL, messages=(Message("user", "Choose 1-5."),), seed=seed, hints={}
    )


class Clock:
    now = 50.0

    def __call__(self) -> float:
        return self.now


async def test_an_own_fault_state_has_its_own_windows_and_the_default_is_shared() -> None:
    clock = Clock()
    mine, theirs = FaultState(), FaultState()
    first = ScriptedProvider(MODEL, clock=clock, faults=mine)
    for seed in range(2):
        await first.complete(_request(seed))
    with pytest.raises(ProviderRateLimited):
        await ScriptedProvider(MODEL, clock=clock, faults=mine).complete(_request(2))
    # Another state: a fresh window for the same model id; the process's is untouched.
    await ScriptedProvider(MODEL, clock=clock, faults=theirs).complete(_request(3))
    assert PROCESS_FAULTS.window_for(first.config) is not mine.window_for(first.config)
    mine.reset()
    await first.complete(_request(4))


async def test_error_draws_count_attempts_per_state() -> None:
    failing = "neutral?error_rate=0.5"
    state = FaultState()
    provider = ScriptedProvider(failing, faults=state)
    request = CompletionRequest(
        model=failing, messages=(Message("user", "Choose 1-5."),), seed=1, hints={}
    )
    outcomes = []
    for _ in range(30):
        try:
            await provider.complete(request)
            outcomes.append(True)
        except ProviderTransient:
            outcomes.append(False)
    # Each resend is a fresh draw: both outcomes occur; a fresh state replays the same draws.
    assert True in outcomes and False in outcomes
    replay = []
    again = ScriptedProvider(failing, faults=FaultState())
    for _ in range(30):
        try:
            await again.complete(request)
            replay.append(True)
        except ProviderTransient:
            replay.append(False)
    assert replay == outcomes


def test_bounded_attempt_memory() -> None:
    state = FaultState(max_tracked_requests=2)
    assert [state.attempt_number(k) for k in ("a", "a", "b", "c", "a")] == [0, 1, 0, 0, 0]
