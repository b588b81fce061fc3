"""How many jobs a worker claims: its free places, and with short jobs some more, claimed
ahead. Pure arithmetic over the worker's state (tests/queue/test_claim_ahead.py runs it in a
real worker).

Without claiming ahead, a worker of concurrency K runs at most K handlers at once and holds at
most 2K jobs (`held`: claimed and not yet recorded as done): it claims no more while K
successes wait to be written.

Claiming ahead: when its jobs are short, a worker also claims A more jobs than it has places
for, which wait in the worker (leased, `running` in the database) and start as places free,
so one claim statement serves many short jobs. A is as many as it expects to start within
`claim_ahead_seconds` (at most half a heartbeat), from how long its handlers take (a moving
average, or the longest running handler if longer), at most `claim_ahead`; 0 until a handler
has returned. It then holds at most 2(K + A) jobs, and refills once half of A is free (or a
place would otherwise stay empty). Only a claim no cap, rate bucket or organisation default
applies to takes jobs ahead (a waiting job would hold slots or a reservation). A job claimed
ahead that has not started when its first heartbeat is due is handed back (queued, its
attempt refunded); a stopping worker hands back its waiting jobs at once; a killed worker's
are reaped when their leases expire, like its running ones.
"""

from __future__ import annotations

from collections.abc import Iterable

from valuerank.queue.settings import QueueSettings


def moving_duration(average: float | None, took: float) -> float:
    """The handlers' moving average of seconds, after one that took `took`."""
    return took if average is None else 0.8 * average + 0.2 * took


def jobs_ahead(
    settings: QueueSettings,
    concurrency: int,
    average: float | None,
    began: Iterable[float],
    now: float,
) -> int:
    """How many jobs to hold beyond `concurrency` now. `average`: the handlers' moving average
    of seconds (None before the first returned); `began`: when the running handlers started
    (monotonic, as `now`)."""
    s = settings
    if s.claim_ahead <= 0 or average is None:
        return 0
    longest = max((now - start for start in began), default=0.0)
    per_job = max(average, longest)
    budget = min(s.claim_ahead_seconds, s.heartbeat_seconds / 2) * concurrency
    if per_job <= 0 or budget / per_job >= s.claim_ahead:
        return s.claim_ahead
    return int(budget / per_job)


def claim_sizes(concurrency: int, ahead: int, in_hand: int, held: int) -> tuple[int, int]:
    """(limit, ahead) for a claim now; both 0: no claim now. `limit`: the places no job waits
    for; `ahead`: more jobs to claim ahead. `in_hand`: jobs running or waiting in the worker;
    `held`: those and the outcomes being written. The worker holds at most 2(K + A) jobs (no
    more than K + A successes waiting to be written); it refills jobs claimed ahead once half
    of A is free, so that one claim takes several."""
    k, a = concurrency, ahead
    free = min(k + a - in_hand, 2 * (k + a) - held)
    if free <= 0:
        return 0, 0
    limit = max(0, min(k - in_hand, free))
    if limit == 0 and free < max(1, (a + 1) // 2):
        return 0, 0
    return limit, free - limit
