"""Calling models from jobs: providers built once per worker, errors mapped to the queue's,
an optional response cache, and costs from the model registry.

Provider errors become queue errors here and only here: rate-limited → `RateLimited` (retry at
the reset, no attempt spent), transient → `Transient` (backoff), permanent → `Permanent`.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import bindparam, delete, select, tuple_
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.credentials.store import resolve_api_key
from valuerank.db.compiled import CompiledOnce
from valuerank.db.engine import Database
from valuerank.db.tables import response_cache
from valuerank.errors import ValueRankError
from valuerank.pipeline.prompts import cache_key
from valuerank.providers.base import (
    Completion,
    CompletionRequest,
    Provider,
    ProviderError,
    ProviderPermanent,
    ProviderRateLimited,
    Usage,
)
from valuerank.providers.costs import cost_usd
from valuerank.providers.factory import build_provider
from valuerank.providers.model_id import ModelId, parse_model_id
from valuerank.providers.presets import preset_for
from valuerank.providers.registry import adapter_spec
from valuerank.queue import Permanent, RateLimited, Transient
from valuerank.queue.dialect import db_now_plus
from valuerank.registry.service import prices_for


def as_job_error(exc: ProviderError) -> Exception:
    """The queue's view of a provider failure."""
    if isinstance(exc, ProviderRateLimited):
        return RateLimited(str(exc), retry_after=exc.retry_after)
    if isinstance(exc, ProviderPermanent):
        return Permanent(str(exc))
    return Transient(str(exc))


@dataclass
class ProviderPool:
    """One provider object per (provider, key) in this worker: SDK clients keep connection
    pools, and the local model is loaded once."""

    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    _providers: dict[tuple[str, str, str], Provider] = field(default_factory=dict)

    async def get(self, conn: AsyncConnection, org_id: str, model: ModelId) -> Provider:
        try:
            api_key = await resolve_api_key(conn, org_id, model.provider, environ=self.environ)
        except ValueRankError as exc:
            raise Permanent(exc.message) from exc
        # Keyed by a digest, so no key sits in a dict that might be printed.
        fingerprint = hashlib.sha256((api_key or "").encode()).hexdigest()[:16]
        # Adapters that build one provider per model (local, scripted) get one slot per
        # model; the SDK adapters serve every model of a key from one client.
        per_model = adapter_spec(preset_for(model.provider).kind).builds_per_model
        slot = (model.provider, fingerprint, model.name if per_model else "")
        provider = self._providers.get(slot)
        if provider is None:
            try:
                provider = build_provider(
                    model.provider,
                    api_key=api_key,
                    model_name=model.name,
                    environ=self.environ,
                )
            except ProviderError as exc:
                raise as_job_error(exc) from exc
            self._providers[slot] = provider
        return provider

    async def aclose(self) -> None:
        for provider in self._providers.values():
            await provider.aclose()
        self._providers.clear()


@dataclass(frozen=True)
class CacheEntry:
    """A fresh answer's row of the response cache."""

    org_id: str
    key: str
    model: str
    completion: dict[str, Any]


@dataclass(frozen=True)
class Prepared:
    """What a call reads from the database before it: the provider (with its key), the
    model's prices, and the cached answer (looked up only when asked, `cache_key` given)."""

    provider: Provider
    prices: tuple[float, float] | None
    hit: Mapping[str, Any] | None = None


async def prepare_call(
    conn: AsyncConnection,
    pool: ProviderPool,
    *,
    org_id: str,
    model_id: str,
    cache_key: str | None = None,
) -> Prepared:
    """The reads before a call, in the caller's transaction: a job that reads other rows
    first does them all in one transaction (`call_model(prepared=…)`)."""
    provider = await pool.get(conn, org_id, parse_model_id(model_id))
    prices = await prices_for(conn, model_id)
    hit = None
    if cache_key is not None:
        hit = (
            await conn.execute(_CACHED, {"org_id": org_id, "key": cache_key})
        ).scalar_one_or_none()
    return Prepared(provider, prices, hit)


_CACHED = select(response_cache.c.completion).where(
    response_cache.c.org_id == bindparam("org_id"), response_cache.c.key == bindparam("key")
)


@dataclass(frozen=True)
class Answer:
    completion: Completion
    cost_usd: float | None
    cached: bool
    # Set when the caller asked to write the cache itself (`write_cache=False`): the row to
    # pass to `store_in_cache` in the caller's own transaction.
    cache_entry: CacheEntry | None = None


async def store_in_cache(conn: AsyncConnection, entries: Sequence[CacheEntry]) -> None:
    """Write fresh answers to the response cache (a row already there is kept)."""
    if not entries:
        return
    await _CACHE_INSERT.execute(
        conn,
        [
            {"org_id": e.org_id, "key": e.key, "model": e.model, "completion": e.completion}
            for e in entries
        ],
    )


# INSERT … ON CONFLICT DO NOTHING, compiled once (every probe writes one row).
_CACHE_INSERT = CompiledOnce(
    lambda insert: insert(response_cache).on_conflict_do_nothing(index_elements=["org_id", "key"])
)


async def prune_response_cache(conn: AsyncConnection, *, older_than_days: float, batch: int) -> int:
    """Delete up to `batch` of the oldest cached answers first cached before the cutoff."""
    cutoff = db_now_plus(conn.dialect.name, -older_than_days * 86400.0)
    oldest = (
        select(response_cache.c.org_id, response_cache.c.key)
        .where(response_cache.c.created_at < cutoff)
        .order_by(response_cache.c.created_at)
        .limit(batch)
    )
    keys = [tuple(row) for row in await conn.execute(oldest)]
    if not keys:
        return 0
    gone = await conn.execute(
        delete(response_cache).where(
            tuple_(response_cache.c.org_id, response_cache.c.key).in_(keys)
        )
    )
    return int(gone.rowcount or 0)


def _completion_json(completion: Completion) -> dict[str, Any]:
    return {
        "text": completion.text,
        "finish_reason": completion.finish_reason,
        "input_tokens": completion.usage.input_tokens,
        "output_tokens": completion.usage.output_tokens,
        "latency_ms": completion.latency_ms,
        "synthetic": completion.synthetic,
    }


def _completion_from_json(data: Mapping[str, Any]) -> Completion:
    return Completion(
        text=str(data["text"]),
        finish_reason=data.get("finish_reason"),
        usage=Usage(int(data.get("input_tokens", 0)), int(data.get("output_tokens", 0))),
        latency_ms=float(data.get("latency_ms", 0.0)),
        synthetic=bool(data.get("synthetic", False)),
    )


def request_key(model: ModelId, request: CompletionRequest, sample_index: int) -> str:
    return cache_key(
        model.provider,
        model.name,
        None,
        request.messages,
        {
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "json_schema": request.json_schema,
            # Only synthetic models read hints; a real model's are fixed by its messages.
            "hints": dict(request.hints) or None,
        },
        sample_index,
    )


async def call_model(
    db: Database,
    pool: ProviderPool,
    *,
    org_id: str,
    model_id: str,
    request: CompletionRequest,
    sample_index: int = 0,
    reuse_cache: bool = False,
    write_cache: bool = True,
    before_call: Callable[[], Awaitable[object]] | None = None,
    prepared: Prepared | None = None,
) -> Answer:
    """One completion: from the cache when asked and present, else from the provider.

    Every fresh answer is written to the cache (cheap, and it lets a later run reuse it);
    the cache is only *read* with `reuse_cache`. No transaction is open during the call.
    With `write_cache=False` the answer carries its `cache_entry` instead, for the caller to
    write with its own results (one transaction instead of two). `before_call` is awaited
    right before the provider is asked (not for a cached answer): a call the claim reserved
    no rate-limit request for reserves its own there (`queue.call_reserve`). `prepared`: the
    reads `prepare_call` made in the caller's transaction (with this request's cache key when
    `reuse_cache`), instead of a transaction here.
    """
    model = parse_model_id(model_id)
    key = request_key(model, request, sample_index)
    if prepared is None:
        async with db.transaction() as conn:
            prepared = await prepare_call(
                conn, pool, org_id=org_id, model_id=model_id, cache_key=key if reuse_cache else None
            )
    provider, prices, hit = prepared.provider, prepared.prices, prepared.hit
    if hit is not None:
        completion, cached = _completion_from_json(hit), True
    else:
        if before_call is not None:
            await before_call()
        try:
            completion = await provider.complete(request)
        except ProviderError as exc:
            raise as_job_error(exc) from exc
        cached = False
        entry = CacheEntry(org_id, key, model_id, _completion_json(completion))
        if write_cache:
            async with db.transaction() as conn:
                await store_in_cache(conn, [entry])
    cost = None
    if prices is not None:
        cost = cost_usd(
            completion.usage.input_tokens, completion.usage.output_tokens, prices[0], prices[1]
        )
    pending = None if cached or write_cache else entry
    return Answer(completion, 0.0 if cached else cost, cached, pending)
