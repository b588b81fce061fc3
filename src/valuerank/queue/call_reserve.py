"""Rate-limit reservations for the provider calls a running job makes after its first.

The claim reserves one request (and the job's estimated tokens) per job. A job that makes
several calls (a probe with follow-up turns sends one request per turn) reserves each further
call here, right before sending it, from the bucket the claim would use for that model:
so a provider's RPM counts calls, not jobs. When the bucket cannot grant it yet (no request
left, the minimum spacing not passed, blocked by a 429, or its TPM in debt), the job waits
for it, holding its lease (heartbeats go on; cancellation interrupts the wait). Tokens are not
reserved again: a job's `estimated_tokens` covers all its calls, and its real usage corrects
the bucket when it completes.
"""

from __future__ import annotations

import asyncio

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.engine import Database
from valuerank.db.tables import rate_buckets
from valuerank.queue.ratelimit import (
    BucketState,
    LiveBucket,
    Reservation,
    load_buckets,
    resolve,
    seconds_until_tokens,
    write_reservations,
)

# Waits are recomputed at least this often (a limit changed or lifted meanwhile applies), and
# never shorter than the floor (the database clocks of two transactions may differ slightly).
MAX_SLEEP_SECONDS = 5.0
MIN_SLEEP_SECONDS = 0.01
# What "a TPM bucket in debt" must climb back to before a call is let through.
TOKEN_EPSILON = 1e-6


def seconds_to_grant(state: BucketState) -> float:
    """How long until `state` can grant one request (0: now)."""
    now = state.now
    waits = [0.0]
    if state.blocked_until is not None and state.blocked_until > now:
        waits.append((state.blocked_until - now).total_seconds())
    nxt = state.next_request_at
    if nxt is not None and nxt > now:
        waits.append((nxt - now).total_seconds())
    if state.available_requests is not None and state.rpm_limit:
        waits.append(seconds_until_tokens(state.available_requests, 1.0, state.rpm_limit))
    if state.available_tokens is not None and state.tpm_limit and state.available_tokens <= 0:
        waits.append(seconds_until_tokens(state.available_tokens, TOKEN_EPSILON, state.tpm_limit))
    return max(waits)


async def try_reserve_request(
    conn: AsyncConnection, provider: str | None, model: str | None, credential: str = ""
) -> float | None:
    """Take one request from the bucket of (provider, model, credential) in this transaction.
    None: taken, or no bucket applies; else the seconds to wait before asking again."""
    if provider is None:
        return None
    keys = (
        await conn.execute(select(rate_buckets.c.key).where(rate_buckets.c.provider == provider))
    ).scalars()
    key = resolve(list(keys), provider, model, credential)
    if key is None:
        return None
    state = (await load_buckets(conn, [key], lock=True)).get(key)
    if state is None:  # removed since the read above: no limit any more
        return None
    live = LiveBucket.of(state)
    if live.take(0.0):
        await write_reservations(conn, Reservation(granted=[key], live={key: live}))
        return None
    return seconds_to_grant(state)


async def reserve_request(
    db: Database, *, provider: str | None, model: str | None, credential: str = ""
) -> float:
    """Reserve one request of (provider, model, credential)'s bucket, waiting until it is
    granted; returns the seconds waited (0 when granted at once or when no bucket applies)."""
    waited = 0.0
    while True:
        async with db.transaction(immediate=True) as conn:
            wait = await try_reserve_request(conn, provider, model, credential)
        if wait is None:
            return waited
        pause = min(max(wait, MIN_SLEEP_SECONDS), MAX_SLEEP_SECONDS)
        await asyncio.sleep(pause)
        waited += pause
