"""Rate limits per (provider, model, credential): token buckets in the database, shared by workers.

A bucket is a `rate_buckets` row. It holds

* an RPM bucket (`request_tokens`, capacity `rpm_limit`) and a TPM bucket (`token_tokens`,
  capacity `tpm_limit`), both refilled continuously by the database time elapsed since
  `refilled_at` (`refill`), and lazily: only a reservation or a correction writes them;
* an optional minimum delay between two requests (`min_interval_ms`, from `last_request_at`);
* `blocked_until`: nothing is claimed for the bucket before it (a 429's reset time);
* adaptive concurrency (`concurrency_limit` in [`concurrency_floor`, `concurrency_ceiling`]):
  halved on every 429, grown by one after `CLEAN_COMPLETIONS_TO_GROW` clean completions.

Which bucket a job uses: its `provider` and `model` columns and `payload["credential"]`
(default ""); the most specific existing bucket, (provider, model, credential) then
(provider, "", credential). A job with no provider, or whose bucket does not exist, is not
rate limited, until its provider answers a 429: a provider with no bucket for the job then
gets a provider-wide one with no limits (`learned_bucket`), blocked until the reset, so that
limits nobody configured are still learned from the 429s and their headers (the wait).

The claim (see `claim.py`) uses a bucket twice per round: before the claiming statement, an
unlocked read tells which buckets cannot grant anything now (blocked, interval not passed, no
request or token left, or already refused during this claim); their jobs are excluded in SQL,
so a blocked provider never hides another provider's jobs. After the statement, the buckets
of the claimed jobs are locked (FOR UPDATE in key order on PostgreSQL; SQLite's write lock)
and re-read at the database's clock, each claimed job reserves 1 request + its
`payload["estimated_tokens"]` in claim order, and the reservation is written by a conditional
UPDATE in the claim's transaction. A job whose reservation is refused is put back as if never
claimed (no attempt counted).

Adaptive concurrency is enforced by the existing concurrency slots: a bucket configured with
`concurrency` owns the slot cap of its scope (`model:<provider>:<model>`, or
`provider:<provider>` for a provider-wide bucket) and keeps its `max` equal to
`concurrency_limit`. (The cap is per provider/model, whatever the bucket's credential.)

Lock order everywhere: job rows, then bucket rows, then slot rows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, func, insert, not_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from valuerank.db.tables import jobs, rate_buckets
from valuerank.queue.dialect import as_utc, db_now, seconds_since, to_db, upsert
from valuerank.queue.job import Job
from valuerank.queue.settings import unlimited_if_zero
from valuerank.queue.slots import SlotScope, model_key, provider_key, remove_cap, set_cap

# For handlers that call an HTTP API themselves: the wait a 429's headers name (the one
# parser, shared with the provider adapters; see `valuerank.ratelimit_headers`).
from valuerank.ratelimit_headers import parse_duration, reset_from_headers

CLEAN_COMPLETIONS_TO_GROW = 20
"""Clean completions in a row after which an adaptive bucket's concurrency grows by one."""


# -- pure helpers -----------------------------------------------------------------------------


def bucket_key(provider: str, model: str = "", credential: str = "") -> str:
    return f"{provider}|{model}|{credential}"


def refill(tokens: float, per_minute: float, elapsed_seconds: float) -> float:
    """A bucket of capacity `per_minute` holding `tokens`, `elapsed_seconds` later.

    Refills continuously at per_minute/60 per second, never above capacity; a negative
    elapsed time (clocks of concurrent transactions) refills nothing. `tokens` may be
    negative (debt after usage exceeded the estimate).
    """
    gained = max(elapsed_seconds, 0.0) * per_minute / 60.0
    return min(float(per_minute), tokens + gained) if tokens < per_minute else float(per_minute)


def seconds_until_tokens(tokens: float, needed: float, per_minute: float) -> float:
    """How long until a bucket holding `tokens` holds `needed` (0 if it already does)."""
    if tokens >= needed:
        return 0.0
    if per_minute <= 0:
        return math.inf
    return (needed - tokens) * 60.0 / per_minute


def cut_concurrency(limit: int, floor: int) -> int:
    """The concurrency after a 429: halved, never below `floor` (nor below 1)."""
    return max(limit // 2, floor, 1)


def grow_concurrency(limit: int, ceiling: int | None) -> int:
    """The concurrency after enough clean completions: one more, up to `ceiling`."""
    return limit + 1 if ceiling is None or limit < ceiling else limit


# -- bucket state -------------------------------------------------------------------------------


@dataclass(frozen=True)
class BucketState:
    """A bucket as stored, plus its RPM/TPM contents refilled up to `now` (the DB clock)."""

    key: str
    org_id: str | None
    provider: str
    model: str
    credential: str
    rpm_limit: float | None
    tpm_limit: float | None
    request_tokens: float
    token_tokens: float
    refilled_at: datetime | None
    min_interval_ms: int
    last_request_at: datetime | None
    blocked_until: datetime | None
    concurrency_limit: int | None
    concurrency_floor: int
    concurrency_ceiling: int | None
    clean_streak: int
    rate_limited_total: int
    now: datetime
    available_requests: float | None = None  # None: no RPM limit
    available_tokens: float | None = None  # None: no TPM limit

    @property
    def blocked(self) -> bool:
        return self.blocked_until is not None and self.blocked_until > self.now

    @property
    def next_request_at(self) -> datetime | None:
        """When the minimum interval allows the next request (None: no interval to wait)."""
        if self.min_interval_ms <= 0 or self.last_request_at is None:
            return None
        return self.last_request_at + timedelta(milliseconds=self.min_interval_ms)

    def open_at(self, now: datetime) -> bool:
        """Not blocked and past the minimum interval at `now`."""
        if self.blocked_until is not None and self.blocked_until > now:
            return False
        nxt = self.next_request_at
        return nxt is None or nxt <= now

    @property
    def exhausted(self) -> bool:
        """Can grant nothing now: blocked, too early, or out of requests or tokens."""
        if not self.open_at(self.now):
            return True
        if self.available_requests is not None and self.available_requests < 1:
            return True
        return self.available_tokens is not None and self.available_tokens <= 0


def _opt(value: datetime | None) -> datetime | None:
    return None if value is None else as_utc(value)


def state_from_row(row: Any, now: datetime) -> BucketState:
    m = row._mapping
    refilled_at = _opt(m["refilled_at"])
    elapsed = 0.0 if refilled_at is None else (now - refilled_at).total_seconds()
    rpm, tpm = m["rpm_limit"], m["tpm_limit"]
    return BucketState(
        key=m["key"],
        org_id=m["org_id"],
        provider=m["provider"],
        model=m["model"],
        credential=m["credential"],
        rpm_limit=rpm,
        tpm_limit=tpm,
        request_tokens=m["request_tokens"],
        token_tokens=m["token_tokens"],
        refilled_at=refilled_at,
        min_interval_ms=m["min_interval_ms"],
        last_request_at=_opt(m["last_request_at"]),
        blocked_until=_opt(m["blocked_until"]),
        concurrency_limit=m["concurrency_limit"],
        concurrency_floor=m["concurrency_floor"],
        concurrency_ceiling=m["concurrency_ceiling"],
        clean_streak=m["clean_streak"],
        rate_limited_total=m["rate_limited_total"],
        now=now,
        available_requests=None if rpm is None else refill(m["request_tokens"], rpm, elapsed),
        available_tokens=None if tpm is None else refill(m["token_tokens"], tpm, elapsed),
    )


async def bucket_now(conn: AsyncConnection) -> datetime:
    """The database's clock right now (PostgreSQL: clock_timestamp(), not the transaction's
    start, so a claimer that waited for a bucket lock sees the time it got it)."""
    if conn.dialect.name == "postgresql":
        value = await conn.scalar(select(func.clock_timestamp()))
    else:
        value = await conn.scalar(select(db_now("sqlite")))
    if isinstance(value, str):  # pragma: no cover - depends on the driver's type handling
        value = datetime.fromisoformat(value)
    assert isinstance(value, datetime)
    return as_utc(value)


async def load_buckets(
    conn: AsyncConnection, keys: Sequence[str] | None = None, *, lock: bool = False
) -> dict[str, BucketState]:
    """Buckets (all, or those of `keys`) at the database's now; `lock` takes their row locks
    in key order (PostgreSQL) first."""
    query = select(rate_buckets).order_by(rate_buckets.c.key)
    if keys is not None:
        if not keys:
            return {}
        query = query.where(rate_buckets.c.key.in_(sorted(set(keys))))
    if lock and conn.dialect.name == "postgresql":
        query = query.with_for_update()
    rows = (await conn.execute(query)).all()
    if not rows:
        return {}
    now = await bucket_now(conn)
    return {r.key: state_from_row(r, now) for r in rows}


async def bucket_state(conn: AsyncConnection, key: str) -> BucketState | None:
    """A bucket by key (see `bucket_key`), refilled to now; None if there is none."""
    return (await load_buckets(conn, [key])).get(key)


async def list_buckets(conn: AsyncConnection) -> list[BucketState]:
    return list((await load_buckets(conn)).values())


def _slot_scope(provider: str, model: str) -> tuple[SlotScope, str]:
    if model:
        return SlotScope.MODEL, model_key(provider, model)
    return SlotScope.PROVIDER, provider_key(provider)


async def _set_slot_max(conn: AsyncConnection, provider: str, model: str, limit: int) -> None:
    scope, _ = _slot_scope(provider, model)
    await set_cap(conn, scope, limit, provider=provider, model=model or None)


async def configure_bucket(
    conn: AsyncConnection,
    provider: str,
    model: str = "",
    credential: str = "",
    *,
    rpm: float | None = None,
    tpm: float | None = None,
    min_interval_ms: int = 0,
    concurrency: int | None = None,
    concurrency_floor: int = 1,
    concurrency_ceiling: int | None = None,
    org_id: str | None = None,
) -> str:
    """Create or change the bucket of (provider, model, credential); returns its key.

    A new bucket starts full. Changing a bucket keeps its contents (capped to the new
    capacities at the next refill) and its block. `concurrency` sets the adaptive limit
    (and the ceiling, unless `concurrency_ceiling` is given) and takes over the slot cap of
    the bucket's provider/model; None lifts a cap this bucket had set. A limit of 0 (rpm,
    tpm, concurrency) is no limit, as None is.
    """
    if not provider:
        raise ValueError("a rate bucket needs a provider")
    rpm, tpm = unlimited_if_zero(rpm), unlimited_if_zero(tpm)
    concurrency = unlimited_if_zero(concurrency)
    for name, value in (("rpm", rpm), ("tpm", tpm)):
        if value is not None and value <= 0:
            raise ValueError(f"{name} cannot be negative (0 or None: no limit)")
    if min_interval_ms < 0:
        raise ValueError("min_interval_ms cannot be negative")
    if concurrency is not None:
        if concurrency < 1 or concurrency_floor < 1:
            raise ValueError("concurrency and its floor must be at least 1")
        ceiling = concurrency_ceiling if concurrency_ceiling is not None else concurrency
        if not concurrency_floor <= concurrency <= ceiling:
            raise ValueError("need concurrency_floor <= concurrency <= concurrency_ceiling")
    else:
        ceiling = None
    key = bucket_key(provider, model, credential)
    dialect = conn.dialect.name
    existing = await load_buckets(conn, [key], lock=True)
    old = existing.get(key)
    now = old.now if old is not None else await bucket_now(conn)
    values: dict[str, Any] = {
        "org_id": org_id,
        "rpm_limit": rpm,
        "tpm_limit": tpm,
        "min_interval_ms": min_interval_ms,
        "concurrency_limit": concurrency,
        "concurrency_floor": concurrency_floor,
        "concurrency_ceiling": ceiling,
        "updated_at": to_db(dialect, now),
    }
    if old is None:
        await conn.execute(
            insert(rate_buckets).values(
                key=key,
                provider=provider,
                model=model,
                credential=credential,
                request_tokens=float(rpm or 0.0),
                token_tokens=float(tpm or 0.0),
                refilled_at=to_db(dialect, now),
                clean_streak=0,
                rate_limited_total=0,
                **values,
            )
        )
    else:
        # Bring the contents up to now under the old limits; a newly limited bucket starts full.
        req = old.available_requests if old.available_requests is not None else rpm
        tok = old.available_tokens if old.available_tokens is not None else tpm
        await conn.execute(
            update(rate_buckets)
            .where(rate_buckets.c.key == key)
            .values(
                request_tokens=float(req or 0.0),
                token_tokens=float(tok or 0.0),
                refilled_at=to_db(dialect, now),
                **values,
            )
        )
    if concurrency is not None:
        await _set_slot_max(conn, provider, model, concurrency)
    elif old is not None and old.concurrency_limit is not None:
        await remove_cap(conn, _slot_scope(provider, model)[1])
    return key


async def remove_bucket(conn: AsyncConnection, key: str) -> bool:
    """Delete a bucket (and the slot cap it owned, if adaptive); its jobs run unlimited."""
    old = (await load_buckets(conn, [key], lock=True)).get(key)
    if old is None:
        return False
    await conn.execute(rate_buckets.delete().where(rate_buckets.c.key == key))
    if old.concurrency_limit is not None:
        await remove_cap(conn, _slot_scope(old.provider, old.model)[1])
    return True


async def seconds_until_reopen(conn: AsyncConnection) -> float | None:
    """Seconds until the first blocked bucket opens again, by the database clock; None when
    none is blocked (a worker with nothing to claim sleeps no longer than that)."""
    dialect = conn.dialect.name
    ago = await conn.scalar(
        select(seconds_since(dialect, func.min(rate_buckets.c.blocked_until))).where(
            rate_buckets.c.blocked_until > db_now(dialect)
        )
    )
    return None if ago is None else max(-float(ago), 0.0)


# -- which bucket a job uses ------------------------------------------------------------------


def job_credential(payload: Any) -> str:
    value = payload.get("credential") if isinstance(payload, Mapping) else None
    return value if isinstance(value, str) else ""


def estimated_tokens(payload: Any) -> float:
    value = payload.get("estimated_tokens") if isinstance(payload, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return max(float(value), 0.0) if math.isfinite(value) else 0.0


def resolve(
    keys: Iterable[str] | Mapping[str, Any],
    provider: str | None,
    model: str | None,
    credential: str,
) -> str | None:
    """The bucket key a job uses among existing `keys`: most specific first; None: no bucket."""
    if provider is None:
        return None
    existing = keys if isinstance(keys, Mapping) else set(keys)
    for candidate in (
        bucket_key(provider, model or "", credential),
        bucket_key(provider, "", credential),
    ):
        if candidate in existing:
            return candidate
    return None


def exclusion_clauses(
    j: Any, closed: Iterable[BucketState], every: Iterable[BucketState]
) -> list[ColumnElement[bool]]:
    """WHERE clauses (on jobs alias `j`) leaving out the jobs whose bucket is in `closed`."""
    closed = list(closed)
    if not closed:
        return []
    every = list(every)
    provider = func.coalesce(j.c.provider, "")
    model = func.coalesce(j.c.model, "")
    credential = func.coalesce(j.c.payload["credential"].as_string(), "")
    clauses: list[ColumnElement[bool]] = []
    for b in closed:
        parts: list[ColumnElement[bool]] = [provider == b.provider, credential == b.credential]
        if b.model:
            parts.append(model == b.model)
        else:
            own = sorted(
                {
                    o.model
                    for o in every
                    if o.provider == b.provider and o.credential == b.credential and o.model
                }
            )
            if own:
                parts.append(model.not_in(own))
        clauses.append(not_(and_(*parts)))
    return clauses


# -- reservations in the claim --------------------------------------------------------------------


@dataclass
class LiveBucket:
    """A bucket's contents while requests are reserved from it (pure bookkeeping): during
    one claim round (`plan_reservations`), or for one further call of a running job
    (`call_reserve`)."""

    state: BucketState
    requests: float | None
    tokens: float | None
    open: bool
    granted: int = 0
    tokens_taken: float = 0.0

    @classmethod
    def of(cls, state: BucketState) -> LiveBucket:
        return cls(
            state, state.available_requests, state.available_tokens, state.open_at(state.now)
        )

    def take(self, cost: float) -> bool:
        if not self.open:
            return False
        if self.requests is not None and self.requests < 1:
            return False
        if self.tokens is not None:
            if self.state.tpm_limit is not None:
                cost = min(cost, self.state.tpm_limit)  # a job larger than the bucket still runs
            if self.tokens < cost or self.tokens <= 0:
                return False
            self.tokens -= cost
        if self.requests is not None:
            self.requests -= 1
        self.granted += 1
        self.tokens_taken += cost
        if self.state.min_interval_ms > 0:
            self.open = False  # one request per interval
        return True


@dataclass
class Reservation:
    """What a round's jobs reserve: granted job ids, refused ones, and per-bucket takings."""

    granted: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    refused_buckets: set[str] = field(default_factory=set)
    live: dict[str, LiveBucket] = field(default_factory=dict)


def plan_reservations(
    buckets: Mapping[str, BucketState],
    claimed: Sequence[Job],
    closed: Set[str] = frozenset(),
) -> Reservation:
    """Reserve, in order, 1 request + its estimated tokens for each job (pure).

    Once a bucket refuses a job it refuses the rest of the round (first come, first served:
    a large job is not overtaken forever by small ones). Jobs without a bucket are granted.
    """
    plan = Reservation(live={k: LiveBucket.of(s) for k, s in buckets.items()})
    for job in claimed:
        key = resolve(buckets, job.provider, job.model, job_credential(job.payload))
        if key is None:
            plan.granted.append(job.id)
            continue
        live = plan.live[key]
        if (
            key not in closed
            and key not in plan.refused_buckets
            and live.take(estimated_tokens(job.payload))
        ):
            plan.granted.append(job.id)
        else:
            plan.refused.append(job.id)
            plan.refused_buckets.add(key)
    return plan


def job_bucket_keys(buckets: Mapping[str, Any], claimed: Iterable[Job]) -> list[str]:
    keys = {resolve(buckets, j.provider, j.model, job_credential(j.payload)) for j in claimed}
    return sorted(k for k in keys if k is not None)


async def write_reservations(conn: AsyncConnection, plan: Reservation) -> None:
    """Write what `plan` took from each bucket: a conditional UPDATE per bucket, in key order."""
    dialect = conn.dialect.name
    for key in sorted(plan.live):
        live = plan.live[key]
        if live.granted == 0:
            continue
        s = live.state
        now = to_db(dialect, s.now)
        new_requests = s.request_tokens if live.requests is None else live.requests
        new_tokens = s.token_tokens if live.tokens is None else live.tokens
        result = await conn.execute(
            update(rate_buckets)
            .where(
                rate_buckets.c.key == key,
                rate_buckets.c.request_tokens == s.request_tokens,
                rate_buckets.c.token_tokens == s.token_tokens,
            )
            .values(
                request_tokens=new_requests,
                token_tokens=new_tokens,
                refilled_at=now,
                last_request_at=now,
                updated_at=now,
            )
        )
        if result.rowcount != 1:  # cannot happen under the row lock / SQLite's write lock
            raise RuntimeError(f"rate bucket {key!r} changed under its lock")


# -- feedback from finished attempts ----------------------------------------------------------


async def _bucket_of_row(
    conn: AsyncConnection, row: Any, *, lock: bool = True
) -> BucketState | None:
    """The bucket (locked by default) of a job that just left `running` (row: provider,
    model, id)."""
    if row.provider is None:
        return None
    candidates = (
        await conn.execute(
            select(rate_buckets.c.key, rate_buckets.c.credential).where(
                rate_buckets.c.provider == row.provider,
                rate_buckets.c.model.in_(sorted({row.model or "", ""})),
            )
        )
    ).all()
    if not candidates:
        return None
    credential = ""
    if any(c.credential for c in candidates):
        payload = await conn.scalar(select(jobs.c.payload).where(jobs.c.id == row.id))
        credential = job_credential(payload)
    key = resolve([c.key for c in candidates], row.provider, row.model, credential)
    if key is None:
        return None
    return (await load_buckets(conn, [key], lock=lock)).get(key)


async def note_completed(
    conn: AsyncConnection, row: Any, *, usage_tokens: float | None = None
) -> None:
    """A job of this bucket succeeded: correct its token reservation with the real usage
    (may leave the TPM bucket in debt) and count a clean completion (adaptive growth)."""
    if row.provider is None:
        return
    bucket = await _bucket_of_row(conn, row, lock=False)  # most completions write nothing
    if bucket is None:
        return
    if bucket.concurrency_limit is None and (usage_tokens is None or bucket.tpm_limit is None):
        return
    bucket = (await load_buckets(conn, [bucket.key], lock=True)).get(bucket.key)
    if bucket is None:
        return
    values: dict[str, Any] = {}
    if usage_tokens is not None and bucket.tpm_limit is not None:
        payload = await conn.scalar(select(jobs.c.payload).where(jobs.c.id == row.id))
        reserved = min(estimated_tokens(payload), bucket.tpm_limit)
        assert bucket.available_tokens is not None
        values["token_tokens"] = bucket.available_tokens - (max(usage_tokens, 0.0) - reserved)
        values["request_tokens"] = (
            bucket.available_requests
            if bucket.available_requests is not None
            else bucket.request_tokens
        )
        values["refilled_at"] = to_db(conn.dialect.name, bucket.now)
    if bucket.concurrency_limit is not None:
        streak = bucket.clean_streak + 1
        if streak >= CLEAN_COMPLETIONS_TO_GROW:
            grown = grow_concurrency(bucket.concurrency_limit, bucket.concurrency_ceiling)
            if grown != bucket.concurrency_limit:
                values["concurrency_limit"] = grown
                await _set_slot_max(conn, bucket.provider, bucket.model, grown)
            streak = 0
        values["clean_streak"] = streak
    if values:
        values["updated_at"] = to_db(conn.dialect.name, bucket.now)
        await conn.execute(
            update(rate_buckets).where(rate_buckets.c.key == bucket.key).values(values)
        )


async def note_rate_limited(
    conn: AsyncConnection, row: Any, *, retry_after: float | Callable[[], float]
) -> None:
    """A job of this bucket got a 429: block the bucket until the reset, count it, and halve
    its adaptive concurrency. A provider with no bucket for the job gets one first
    (`learned_bucket`), so that no job of it is claimed before the reset either.
    `retry_after` may be a function giving the wait left: it is asked once the bucket is
    locked (the 429s of all the jobs in flight queue up on that lock)."""
    bucket = await _bucket_of_row(conn, row)
    if bucket is None:
        bucket = await learned_bucket(conn, row)
        if bucket is None:
            return
    await block_bucket(conn, bucket, retry_after() if callable(retry_after) else retry_after)


async def learned_bucket(conn: AsyncConnection, row: Any) -> BucketState | None:
    """The bucket a 429 makes for a provider whose limits nobody configured (row: provider,
    model, id of the job that got it): provider-wide (every model of the provider, under the
    job's credential), with no limit of its own; it only carries the blocks of the 429s and
    their count. Setting the provider's limits later fills in this bucket; limits set for one
    model take precedence for that model, as always. Returned locked; None without a
    provider. Concurrent 429s of several workers make one bucket."""
    if row.provider is None:
        return None
    payload = await conn.scalar(select(jobs.c.payload).where(jobs.c.id == row.id))
    credential = job_credential(payload)
    key = bucket_key(row.provider, "", credential)
    now = to_db(conn.dialect.name, await bucket_now(conn))
    await conn.execute(
        upsert(conn)(rate_buckets)
        .values(
            key=key,
            provider=row.provider,
            model="",
            credential=credential,
            refilled_at=now,
            updated_at=now,
        )
        .on_conflict_do_nothing(index_elements=[rate_buckets.c.key])
    )
    return (await load_buckets(conn, [key], lock=True)).get(key)


async def block_bucket(conn: AsyncConnection, bucket: BucketState | str, seconds: float) -> None:
    """Block a bucket for `seconds` from now (a longer block already set is kept)."""
    if isinstance(bucket, str):
        found = (await load_buckets(conn, [bucket], lock=True)).get(bucket)
        if found is None:
            return
        bucket = found
    until = bucket.now + timedelta(seconds=max(seconds, 0.0))
    if bucket.blocked_until is not None and bucket.blocked_until > until:
        until = bucket.blocked_until
    dialect = conn.dialect.name
    values: dict[str, Any] = {
        "blocked_until": to_db(dialect, until),
        "rate_limited_total": rate_buckets.c.rate_limited_total + 1,
        "clean_streak": 0,
        "updated_at": to_db(dialect, bucket.now),
    }
    if bucket.concurrency_limit is not None:
        cut = cut_concurrency(bucket.concurrency_limit, bucket.concurrency_floor)
        if cut != bucket.concurrency_limit:
            values["concurrency_limit"] = cut
            await _set_slot_max(conn, bucket.provider, bucket.model, cut)
    await conn.execute(update(rate_buckets).where(rate_buckets.c.key == bucket.key).values(values))


__all__ = [
    "CLEAN_COMPLETIONS_TO_GROW",
    "BucketState",
    "LiveBucket",
    "Reservation",
    "block_bucket",
    "bucket_key",
    "bucket_state",
    "configure_bucket",
    "cut_concurrency",
    "estimated_tokens",
    "exclusion_clauses",
    "grow_concurrency",
    "learned_bucket",
    "list_buckets",
    "load_buckets",
    "note_completed",
    "note_rate_limited",
    "parse_duration",
    "plan_reservations",
    "refill",
    "remove_bucket",
    "reset_from_headers",
    "resolve",
    "seconds_until_reopen",
    "write_reservations",
]
