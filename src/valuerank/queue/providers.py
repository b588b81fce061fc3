"""Per-provider controls of the queue in one place: rate-limit buckets (RPM, TPM, spacing,
adaptive concurrency), concurrency caps, the pause flag, and the state a provider is in now.

Used by `valuerank queue limits …` and `/api/providers`. Providers are plain labels here (the
queue knows nothing of ValueRank): callers pass the names they know. Limits and pauses are
shared by every organisation; queue counts are the caller's organisation's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.errors import InvalidInputError, NotFoundError
from valuerank.queue.dialect import iso
from valuerank.queue.ratelimit import (
    BucketState,
    bucket_key,
    configure_bucket,
    list_buckets,
    remove_bucket,
)
from valuerank.queue.status import ProviderStatus, queue_status
from valuerank.shapes import dump


class ProviderNotFoundError(NotFoundError):
    code = "PROVIDER_NOT_FOUND"


class LimitsNotFoundError(NotFoundError):
    code = "LIMITS_NOT_FOUND"


def limits_row(bucket: BucketState) -> dict[str, Any]:
    """A bucket's limits as the CLI's `--json` and the API show them (None: no limit)."""
    return {
        "key": bucket.key,
        "provider": bucket.provider,
        "model": bucket.model or None,
        "rpm": bucket.rpm_limit,
        "tpm": bucket.tpm_limit,
        "min_interval_ms": bucket.min_interval_ms,
        "concurrency": bucket.concurrency_limit,
        "blocked_until": iso(bucket.blocked_until) if bucket.blocked else None,
        "rate_limited_total": bucket.rate_limited_total,
    }


async def set_limits(
    conn: AsyncConnection,
    provider: str,
    model: str = "",
    *,
    rpm: float | None = None,
    tpm: float | None = None,
    min_interval_ms: int = 0,
    concurrency: int | None = None,
) -> dict[str, Any]:
    """Create or change the limits of a provider (or of one of its models); a limit left
    out or 0 is no limit. INVALID_INPUT for a negative or inconsistent one."""
    try:
        key = await configure_bucket(
            conn,
            provider,
            model,
            rpm=rpm,
            tpm=tpm,
            min_interval_ms=min_interval_ms,
            concurrency=concurrency,
        )
    except ValueError as exc:
        raise InvalidInputError(str(exc), hint="0 or null means no limit") from None
    buckets = {b.key: b for b in await list_buckets(conn)}
    return limits_row(buckets[key])


async def remove_limits(conn: AsyncConnection, provider: str, model: str = "") -> str:
    """Remove a provider's (or model's) limits: its jobs run unlimited. Returns the key."""
    key = bucket_key(provider, model)
    if not await remove_bucket(conn, key):
        raise LimitsNotFoundError(f"no limits for {key}", hint="see `valuerank queue limits list`")
    return key


def _view(
    name: str, status: ProviderStatus, limits: list[dict[str, Any]], caps: list[Any]
) -> dict[str, Any]:
    return {
        "name": name,
        "paused": status.paused,
        "queue_length": status.queue_length,
        "in_flight": status.in_flight,
        "rate_limit": str(status.rate_limit),
        "blocked_until": iso(status.blocked_until),
        "limits": limits,
        "caps": caps,
    }


async def provider_views(
    conn: AsyncConnection, org_id: str, known: Iterable[str], *, only: str | None = None
) -> list[dict[str, Any]]:
    """Every known provider (and any other the queue has jobs, limits or a pause for), by
    name: paused or not, the organisation's queued and running jobs, the rate-limit state
    (none/open/exhausted/blocked) and the blocking reset, its limits and concurrency caps.
    With `only`, that provider (PROVIDER_NOT_FOUND if the queue has never heard of it)."""
    status = await queue_status(conn, org_id=org_id)
    buckets = await list_buckets(conn)
    names = set(known) | set(status.providers) | {b.provider for b in buckets}
    if only is not None:
        if only not in names:
            raise ProviderNotFoundError(
                f"no provider {only!r}", hint="GET /api/providers lists them"
            )
        names = {only}
    views = []
    for name in sorted(names):
        limits = [limits_row(b) for b in buckets if b.provider == name]
        limits.sort(key=lambda row: (row["model"] or "", row["key"]))
        caps = dump([c for c in status.caps if c.provider == name])
        views.append(_view(name, status.providers.get(name, ProviderStatus()), limits, caps))
    return views


async def require_provider(
    conn: AsyncConnection, org_id: str, provider: str, known: Iterable[str]
) -> None:
    """PROVIDER_NOT_FOUND unless `provider` is known or the queue has heard of it."""
    await provider_views(conn, org_id, known, only=provider)
